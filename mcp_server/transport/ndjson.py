"""NDJSON framing and the frame loop shared by the STDIO and Unix socket transports.

A line longer than the frame limit is drained, not held: its bytes are counted and dropped but
for its head and tail (``core/oversize.py``), and it comes out as that excerpt carrying its size, for
the size guard to refuse and to answer by the id the excerpt holds.
The loop does no I/O of its own: the transport hands it a chunk source and a writer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from ..core.oversize import HEAD_BYTES, TAIL_BYTES, excerpt
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, Frame, Handler

__all__ = ["MAX_HELD_OUTPUT", "Connect", "LineSplitter", "Output", "read_lines", "serve_ndjson"]

Connect = Callable[[Session, Callable[[bytes], Awaitable[None]], Callable[[], Awaitable[bool]]], None]
"""What an application attaches to a new connection's session: given how to write one frame to
the client and how to read and handle one more chunk (``False`` at end of input) while a handler
waits for the client's answer (a server asking its client something)."""

MAX_HELD_OUTPUT = 16 * 1024 * 1024
"""Bytes of replies one NDJSON connection holds for a client that is not reading them. Past this the
connection's input is not read until the client reads (back-pressure: bounded memory, no deadlock
for a client that reads at all). 16 MiB holds the replies to 100,000 pipelined pings (4.1 MB) or
a few large results with room to spare, and stays small beside the server's own ~70 MiB."""


class Output(Protocol):
    """Where a connection's replies go. Writing never waits (a reply leaves at once, at the latest when
    the loop next waits); the loop waits for ``room`` only once the writer holds ``MAX_HELD_OUTPUT``."""

    def write(self, data: bytes) -> bool:
        """``data`` on its way; ``False`` when the client is that far behind (``room`` before more).
        Raises ``BrokenPipeError`` (or what else ended the output) once the client is gone."""

    async def room(self) -> None:
        """Until the client has read enough for more to be written (or the output ended)."""


async def serve_ndjson(
    next_chunk: Callable[[], Awaitable[bytes]],
    output: Output,
    handler: Handler,
    *,
    transport: str,
    max_frame_bytes: int,
    stop: asyncio.Event,
    connect: Connect | None = None,
) -> None:
    """Frames of one connection through ``handler``, in order, replies in request order.

    ``next_chunk`` returns ``b""`` at end of input; ``output`` takes each reply line. When ``stop`` is
    set the frame in flight is finished and the rest is not started; a stop also ends a wait for the
    client (for input, or for it to read).
    """
    connection = _Connection(next_chunk, output, handler, transport, LineSplitter(max_frame_bytes), stop)
    if connect is not None:
        connect(connection.session, connection.send_line, connection.pump)
    await connection.run()


class _Connection:
    """One NDJSON connection's loop: read a chunk, handle its lines in order, send each reply."""

    def __init__(
        self,
        next_chunk: Callable[[], Awaitable[bytes]],
        output: Output,
        handler: Handler,
        transport: str,
        splitter: LineSplitter,
        stop: asyncio.Event,
    ) -> None:
        self.next_chunk, self.output, self.handler = next_chunk, output, handler
        self.transport, self.splitter, self.stop = transport, splitter, stop
        self.session = Session()
        self.ended = False  # end of input seen while a handler waited for the client (see ``pump``)
        self.waiting = False  # on the client (input, or room for output): a stop may interrupt it, never a handler
        task = asyncio.current_task()
        assert task is not None
        self.task = task

    async def _handle(self, chunk: bytes, *, paced: bool) -> None:
        """The chunk's complete lines, each a frame through the handler, each reply sent in turn."""
        new, session, transport, handler = tuple.__new__, self.session, self.transport, self.handler
        write = self.output.write
        for raw, size in self.splitter.feed(chunk) if chunk else self.splitter.close():
            reply = await handler(new(Frame, (raw, transport, session, size, CLIENT_TO_SERVER, None)))
            if reply is not None and not write(reply.to_bytes() + b"\n"):
                if paced:
                    self._client_paced()
                await self.output.room()
                self.waiting = False
            if paced and self.stop.is_set():
                return

    async def send_line(self, data: bytes) -> None:
        """One frame of the application's own to the client (a request of a server's to its client)."""
        if not self.output.write(data + b"\n"):
            await self.output.room()

    async def pump(self) -> bool:
        """Read and handle one more chunk while a handler waits for the client's answer."""
        chunk = await self.next_chunk()
        self.ended = not chunk
        await self._handle(chunk, paced=False)
        return not self.ended

    def _client_paced(self) -> None:
        """What comes next waits on the client, until ``waiting`` is cleared: a stop may interrupt it."""
        self.waiting = True
        if self.stop.is_set():  # the stop came while a handler ran: this wait is the one it interrupts
            asyncio.get_running_loop().call_soon(self._interrupt, None)

    def _interrupt(self, _: object) -> None:
        if self.waiting:
            self.task.cancel()

    async def run(self) -> None:
        stopping = asyncio.ensure_future(self.stop.wait())
        stopping.add_done_callback(self._interrupt)
        try:
            while not self.stop.is_set() and not self.ended:
                self._client_paced()
                chunk = await self.next_chunk()
                self.waiting = False
                await self._handle(chunk, paced=True)
                if not chunk:
                    break
        except asyncio.CancelledError:
            if not self.stop.is_set():
                raise
            self.task.uncancel()  # the stop interrupted a wait on the client: what was sent stays with the writer
        finally:
            stopping.remove_done_callback(self._interrupt)
            stopping.cancel()


class LineSplitter:
    """Splits a byte stream into lines; memory stays bounded by ``limit`` whatever comes in."""

    __slots__ = ("_buffer", "_dropped", "_dropping", "_head", "_tail", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._dropping = False
        self._dropped = 0
        self._head = b""  # of the line being drained: its first bytes, and its last ones so far
        self._tail = b""

    def feed(self, chunk: bytes) -> list[tuple[bytes, int | None]]:
        """The complete lines in ``chunk`` (with what came before) as ``(raw, size)`` pairs.

        A line over the limit comes as its excerpt (head and tail), with ``size`` saying how long it
        was; a line within the limit has no size of its own (``None``: it is all in ``raw``, and the
        chain's fast path takes it). Blank lines are skipped.
        """
        lines: list[tuple[bytes, int | None]] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end == -1:
                self._hold(chunk[start:])
                return lines
            self._finish(chunk[start:end], lines)
            start = end + 1

    def close(self) -> list[tuple[bytes, int | None]]:
        """At end of stream: the last line, if it had no newline."""
        lines: list[tuple[bytes, int | None]] = []
        if self._dropping or self._buffer:
            self._finish(b"", lines)
        return lines

    def _hold(self, segment: bytes) -> None:
        if self._dropping:
            self._drain(segment)
            return
        self._buffer += segment
        if len(self._buffer) > self.limit + 1:  # +1: a trailing "\r" is not counted
            self._dropping = True
            self._dropped = 0
            self._head, self._tail = b"", b""
            self._drain(bytes(self._buffer))
            self._buffer = bytearray()

    def _drain(self, segment: bytes) -> None:
        """Bytes of a line over the limit: counted, the head and the last ``TAIL_BYTES`` kept."""
        self._dropped += len(segment)
        if len(self._head) < HEAD_BYTES:
            room = HEAD_BYTES - len(self._head)
            self._head += segment[:room]
            segment = segment[room:]
        if segment:
            self._tail = (self._tail + segment)[-TAIL_BYTES - 1 :]  # (+1: a trailing "\r" is not kept)

    def _finish(self, segment: bytes, lines: list[tuple[bytes, int | None]]) -> None:
        if self._dropping:
            self._drain(segment)
            carriage = self._tail.endswith(b"\r")
            tail = (self._tail[:-1] if carriage else self._tail)[-TAIL_BYTES:]
            lines.append((self._head + tail, self._dropped - carriage))
            self._dropping = False
            self._dropped = 0
            self._head, self._tail = b"", b""
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
            lines.append((excerpt(line), len(line)))
        else:
            lines.append((line, None))


async def read_lines(
    next_chunk: Callable[[], Awaitable[bytes]], splitter: LineSplitter
) -> AsyncIterator[tuple[bytes, int | None]]:
    """A peer's lines, as ``splitter`` cuts them, from chunks read until ``b""`` (the end of input)."""
    while True:
        chunk = await next_chunk()
        for line in splitter.feed(chunk) if chunk else splitter.close():
            yield line
        if not chunk:
            return
