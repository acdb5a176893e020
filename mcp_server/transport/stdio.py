"""The STDIO transport: NDJSON on stdin/stdout, one frame per line, replies in request order.

stdout carries JSON-RPC frames only; every diagnostic goes to stderr. Exit 0 at end of input;
on SIGINT/SIGTERM the frame in flight is finished, then the loop ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import threading
from collections.abc import Callable

from ..types import Frame, Handler, Session
from .ndjson import LineSplitter

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
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    queue = start_reader(stdin_fd)
    splitter = LineSplitter(max_frame_bytes)
    session = Session()
    out = os.fdopen(os.dup(stdout_fd), "wb", buffering=_CHUNK)
    stopping = asyncio.ensure_future(stop.wait())
    on_ready()
    try:
        while not stop.is_set():
            reading = asyncio.ensure_future(queue.get())
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()
                break
            chunk = reading.result()
            lines = splitter.feed(chunk) if chunk else splitter.close()
            last = len(lines) - 1
            for index, (raw, size) in enumerate(lines):
                reply = await handler(Frame(raw=raw, size=size, transport="stdio", session=session))
                if reply is not None:
                    out.write(reply.to_bytes() + b"\n")
                    # Replies to a burst of frames go out together; a lone request is answered now.
                    if index == last or stop.is_set():
                        out.flush()
                if stop.is_set():
                    break  # the frame in flight is finished; the rest is not started
            if not chunk:
                break
    except BrokenPipeError:
        pass  # the client closed stdout: nobody is left to answer
    finally:
        stopping.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        with contextlib.suppress(BrokenPipeError):
            out.close()
