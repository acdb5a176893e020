"""The STDIO transport: NDJSON on stdin/stdout, one frame per line, replies in request order.

stdout carries JSON-RPC frames only; every diagnostic goes to stderr. Exit 0 at end of input;
on SIGINT/SIGTERM the frame in flight is finished, then the loop ends. stdin and stdout are both
driven by the event loop, neither blocking it: stdin is read while up to ``MAX_HELD_OUTPUT`` of
replies wait for the client to read stdout, and past that it is not (back-pressure, not deadlock).
"""

from __future__ import annotations

import asyncio
import errno
import os
import selectors
import stat
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol

from ..core.types import Handler
from .coalescing import CoalescingTransport
from .ndjson import MAX_HELD_OUTPUT, Connect, serve_ndjson
from .signals import stop_on_signals

__all__ = ["ChunkReader", "ChunkSource", "ChunkWriter", "open_writer", "serve_stdio", "start_reader"]

_CHUNK = 65_536
_HELD_CHUNKS = 4  # chunks read ahead at most: past this the pipe is not read (backpressure)
_CLOSE_GRACE_SECONDS = 2.0  # after a signal, how long replies already made may take to be read


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
        # A read transport by contract; uvloop's are not subclasses of asyncio's, so no isinstance.
        self._transport = transport  # type: ignore[assignment]

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
    if _pollable(fd):
        reader = ChunkReader()
        pipe = _reopen(fd, os.O_RDONLY)
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


def _pollable(fd: int) -> bool:
    """A pipe, socket or terminal: something the event loop can wait on. Other character devices
    (``/dev/null``, ``/dev/zero``) are refused by epoll, so they are asked, not assumed."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    if not stat.S_ISCHR(mode):
        return False
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except OSError:
            return False
    return True


def _reopen(fd: int, access: int) -> BinaryIO:
    """``fd`` under an open file description of its own where the system allows it, so the
    non-blocking mode the event loop sets does not reach stderr or another process sharing ``fd``."""
    try:
        own = os.open(f"/proc/self/fd/{fd}", access | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # a socket cannot be reopened, nor anything without /proc: share the description
        own = os.dup(fd)
    return os.fdopen(own, "rb" if access == os.O_RDONLY else "wb", buffering=0)


class ChunkWriter(asyncio.Protocol):
    """A pipe written through the event loop, never blocking it.

    What is sent leaves at the loop's next turn, a burst as one write, so a reply never waits for
    more input; what the pipe cannot take yet stays in the transport's buffer, and ``send`` waits
    while that holds ``MAX_HELD_OUTPUT`` (the caller stops reading: back-pressure).
    """

    def __init__(self) -> None:
        self._transport: CoalescingTransport | None = None
        self._ended = True  # until connected; then when the pipe ends (``is_closing`` each write costs more)
        self._paused = False
        self._closed = asyncio.get_running_loop().create_future()
        self._room: asyncio.Future[None] | None = None
        self._failure: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A write transport by contract (uvloop's are not subclasses of asyncio's: no isinstance).
        transport.set_write_buffer_limits(high=MAX_HELD_OUTPUT)  # type: ignore[attr-defined]
        self._transport = CoalescingTransport(transport)  # type: ignore[arg-type]
        self._ended = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        # A reader that left is how a pipe ends; any other error (a full disk) is the sender's to know.
        self._failure = None if isinstance(exc, ConnectionError) else exc
        self._ended = True
        if not self._closed.done():
            self._closed.set_result(None)
        self._wake()

    def _wake(self) -> None:
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    def write(self, data: bytes) -> bool:
        """``data`` on its way to the reader; ``False`` while ``MAX_HELD_OUTPUT`` is held (``room``
        before more). ``BrokenPipeError`` once the reader is gone (the error itself when something
        else ended the pipe, such as a full disk under a file)."""
        transport = self._transport
        if self._ended or transport is None:
            raise self._failure or BrokenPipeError(errno.EPIPE, "the reader closed the pipe")
        transport.write(data)
        return not self._paused

    async def room(self) -> None:
        while self._paused and not self._ended:
            if self._room is None or self._room.done():
                self._room = asyncio.get_running_loop().create_future()
            # One wake-up for every writer that waits (shielded: a writer cancelled leaves it to the others).
            await asyncio.shield(self._room)

    async def send(self, data: bytes) -> None:
        """``write``, then wait while the reader is that far behind."""
        if not self.write(data):
            await self.room()

    async def close(self, stop: asyncio.Event) -> None:
        """Everything sent reaches the reader, then the pipe is closed (raises what made a write fail,
        other than the reader leaving). Once ``stop`` is set (a signal), a reader that does not read
        gets ``_CLOSE_GRACE_SECONDS`` more, then is cut off."""
        assert self._transport is not None
        self._transport.close()  # the transport closes once its buffer is written
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({self._closed, stopping}, return_when=asyncio.FIRST_COMPLETED)
            await asyncio.wait({self._closed}, timeout=_CLOSE_GRACE_SECONDS)
        finally:
            stopping.cancel()
        if not self._closed.done():
            self._transport.abort()
        if self._failure is not None:
            raise self._failure


class _FileTransport(asyncio.WriteTransport):
    """A regular file under a ``ChunkWriter``: a file has no reader to wait for, so it is written at once."""

    def __init__(self, fd: int, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self._fd = fd
        self._protocol = protocol
        protocol.connection_made(self)

    def write(self, data: Any) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:  # a full disk: nothing more can be written, ``send`` raises it
            self._close(exc)

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass  # nothing is ever held

    def is_closing(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        self._close(None)

    def abort(self) -> None:
        self._close(None)

    def _close(self, exc: Exception | None) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._protocol.connection_lost(exc)


async def open_writer(fd: int) -> ChunkWriter:
    """A ``ChunkWriter`` on ``fd`` (a pipe, socket or terminal through the loop; a regular file directly)."""
    writer = ChunkWriter()
    if not _pollable(fd):
        _FileTransport(os.dup(fd), writer)
        return writer
    pipe = _reopen(fd, os.O_WRONLY)
    await asyncio.get_running_loop().connect_write_pipe(lambda: writer, pipe)
    if stat.S_ISSOCK(os.fstat(fd).st_mode):
        # The loop watches a write pipe for input as a sign its reader left; a socket may carry
        # stdin too (inetd style), so it is not watched: a reader that left shows on the next write.
        asyncio.get_running_loop().remove_reader(pipe.fileno())
    return writer


async def serve_stdio(
    handler: Handler,
    *,
    max_frame_bytes: int,
    on_ready: Callable[[], None] = lambda: None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    connect: Connect | None = None,
) -> None:
    source = start_reader(stdin_fd)
    out = await open_writer(stdout_fd)
    with stop_on_signals() as stop:
        on_ready()
        try:
            await serve_ndjson(
                source.get,
                out,
                handler,
                transport="stdio",
                max_frame_bytes=max_frame_bytes,
                stop=stop,
                connect=connect,
            )
        except BrokenPipeError:
            pass  # the client closed stdout: nobody is left to answer
        finally:
            await out.close(stop)
