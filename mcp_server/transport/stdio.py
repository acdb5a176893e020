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
from collections.abc import Callable

from ..types import Handler
from .ndjson import serve_ndjson
from .signals import stop_on_signals

__all__ = ["serve_stdio", "start_reader"]

_CHUNK = 65_536


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


async def _pump_pipe(reader: asyncio.StreamReader, queue: asyncio.Queue[bytes]) -> None:
    while True:
        try:
            chunk = await reader.read(_CHUNK)
        except (OSError, ValueError):
            chunk = b""
        await queue.put(chunk)
        if not chunk:
            return


def start_reader(fd: int) -> asyncio.Queue[bytes]:
    """Chunks of ``fd`` as they arrive, ``b""`` at end of input (a bounded queue: backpressure).

    A pipe or socket is read by the event loop itself (no thread hop per chunk); anything the loop
    cannot watch (a regular file) by a daemon thread.
    """
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)
    loop = asyncio.get_running_loop()
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
        reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
        connected = loop.create_task(loop.connect_read_pipe(lambda: protocol, pipe))

        async def pump() -> None:
            await connected
            await _pump_pipe(reader, queue)

        _background.add(task := loop.create_task(pump()))
        task.add_done_callback(_background.discard)
        return queue
    threading.Thread(target=_pump, args=(fd, loop, queue), daemon=True, name=f"read-fd{fd}").start()
    return queue


_background: set[asyncio.Task[None]] = set()


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
