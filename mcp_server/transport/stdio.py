"""The STDIO transport: NDJSON on stdin/stdout, one frame per line, replies in request order.

stdout carries JSON-RPC frames only; every diagnostic goes to stderr. Exit 0 at end of input;
on SIGINT/SIGTERM the frame in flight is finished, then the loop ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

from ..core.types import Handler
from .ndjson import serve_ndjson
from .signals import stop_on_signals

__all__ = ["ChunkReader", "ChunkSource", "serve_stdio", "start_reader"]

_CHUNK = 65_536
_HELD_CHUNKS = 4  # chunks read ahead at most: past this the pipe is not read (backpressure)


class ChunkSource(Protocol):
    async def get(self) -> bytes:
        """The next chunk; ``b""`` at end of input (and after it)."""
        ...


class ChunkReader(asyncio.Protocol):
    """A pipe's chunks as the event loop receives them, for one consumer.

    The chunk goes from the loop's read callback straight to the waiting consumer: no task or
    queue between them, which is a hop (a loop iteration) fewer per frame. Reading pauses while
    ``_HELD_CHUNKS`` chunks wait, so a fast writer waits and memory stays flat.
    """

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._ended = False
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        if len(self._chunks) >= _HELD_CHUNKS and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> None:
        self._ended = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> bytes:
        while not self._chunks:
            if self._ended:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunk = self._chunks.popleft()
        if self._paused and len(self._chunks) < _HELD_CHUNKS // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return chunk


def _pump(fd: int, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes]) -> None:
    """Read ``fd`` in a daemon thread; the bounded queue makes a fast writer wait (flat memory)."""
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            chunk = b""
        try:
            asyncio.run_coroutine_threadsafe(queue.put(chunk), loop).result()
        except RuntimeError:  # the loop is gone: the server stopped
            return
        if not chunk:
            return


def start_reader(fd: int) -> ChunkSource:
    """Chunks of ``fd`` as they arrive, ``b""`` at end of input, with backpressure.

    A pipe or socket is read by the event loop itself (no thread hop per chunk); anything the loop
    cannot watch (a regular file) by a daemon thread through a bounded queue.
    """
    loop = asyncio.get_running_loop()
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
        reader = ChunkReader()
        pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
        connected = loop.create_task(loop.connect_read_pipe(lambda: reader, pipe))
        _background.add(connected)
        connected.add_done_callback(_background.discard)

        def failed(task: asyncio.Task[object]) -> None:
            if not task.cancelled() and task.exception() is not None:
                reader.eof_received()  # the pipe cannot be read: the consumer sees the end, not a hang

        connected.add_done_callback(failed)
        return reader
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=_HELD_CHUNKS)
    threading.Thread(target=_pump, args=(fd, loop, queue), daemon=True, name=f"read-fd{fd}").start()
    return queue


_background: set[asyncio.Task[object]] = set()


async def serve_stdio(
    handler: Handler,
    *,
    max_frame_bytes: int,
    on_ready: Callable[[], None] = lambda: None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> None:
    queue = start_reader(stdin_fd)
    out = os.fdopen(os.dup(stdout_fd), "wb", buffering=_CHUNK)

    async def send(data: bytes, flush: bool) -> None:
        out.write(data)
        if flush:
            out.flush()

    with stop_on_signals() as stop:
        on_ready()
        try:
            await serve_ndjson(queue.get, send, handler, transport="stdio", max_frame_bytes=max_frame_bytes, stop=stop)
        except BrokenPipeError:
            pass  # the client closed stdout: nobody is left to answer
        finally:
            with contextlib.suppress(BrokenPipeError):
                out.close()
