"""The Unix domain socket transport: NDJSON exactly as on STDIO, one session per connection.

Each connection is its own task, so a slow request holds up only its own connection, and its
replies keep its request order. Reading is bounded (the NDJSON splitter drains oversized lines)
and writing waits for the peer past ``MAX_HELD_OUTPUT``, so a client that floods without reading
stalls only itself. SIGINT/SIGTERM: stop accepting, let every connection finish the frame in
flight, then return; the caller removes the socket file.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..core.settings import SetupError
from ..core.types import Handler
from .ndjson import MAX_HELD_OUTPUT, Connect, serve_ndjson
from .signals import stop_on_signals

__all__ = [
    "accept_until_stopped",
    "bind_unix_socket",
    "chunks_of",
    "serve_unix_socket",
]

_CHUNK = 65_536
_SHUTDOWN_GRACE_SECONDS = 30.0


def _in_use(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def bind_unix_socket(path: Path, mode: int) -> socket.socket:
    """A listening socket at ``path`` with permissions ``mode``, or ``SetupError``.

    The parent directory is created; a stale socket file is replaced; a live one (another server
    answers on it) and anything that is not a socket are refused, never removed. The socket is
    created under a umask that keeps it private until its mode is set, so it is never wider
    than ``mode`` even for a moment.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SetupError(f"cannot create the socket directory {path.parent}: {exc.strerror}") from None
    try:
        existing = path.lstat()
    except FileNotFoundError:
        existing = None
    if existing is not None:
        if not stat.S_ISSOCK(existing.st_mode):
            raise SetupError(f"{path} exists and is not a socket; refusing to replace it")
        if _in_use(path):
            raise SetupError(f"{path} is in use by another server")
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        listener.bind(str(path))
    except OSError as exc:
        listener.close()
        raise SetupError(f"cannot bind {path}: {exc.strerror}") from None
    finally:
        os.umask(previous)
    os.chmod(path, mode)
    listener.listen(128)
    listener.setblocking(False)
    return listener


async def accept_until_stopped(
    listener: socket.socket,
    connection: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    *,
    stop: asyncio.Event,
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """Run ``connection`` for every client of ``listener``, each in its own task, until ``stop``;
    then stop accepting and give the connections time to finish what they are doing. A writer's
    ``drain`` waits while ``MAX_HELD_OUTPUT`` is held for its client."""
    connections: set[asyncio.Task[Any]] = set()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        writer.transport.set_write_buffer_limits(high=MAX_HELD_OUTPUT)
        try:
            await connection(reader, writer)
        except (ConnectionError, OSError):
            pass  # the client went away mid-reply: nothing is left to answer
        finally:
            connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    server = await asyncio.start_unix_server(accepted, sock=listener, limit=_CHUNK)
    on_ready()
    try:
        await stop.wait()
    finally:
        server.close()  # stop accepting; the connections finish the frame in flight
        if connections:
            await asyncio.wait(set(connections), timeout=_SHUTDOWN_GRACE_SECONDS)


def chunks_of(reader: asyncio.StreamReader) -> Callable[[], Awaitable[bytes]]:
    """The next chunk a client sent, ``b""`` once it is gone."""

    async def next_chunk() -> bytes:
        try:
            return await reader.read(_CHUNK)
        except (ConnectionError, OSError):
            return b""

    return next_chunk


class _SocketOutput:
    """A connection's replies (``ndjson.Output``): written at once, the writer's ``drain`` awaited
    only while ``MAX_HELD_OUTPUT`` is held for the client."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.transport = writer.transport

    def write(self, data: bytes) -> bool:
        if self.transport.is_closing():
            raise BrokenPipeError(errno.EPIPE, "the client closed the connection")
        self.transport.write(data)
        return self.transport.get_write_buffer_size() < MAX_HELD_OUTPUT

    async def room(self) -> None:
        await self.writer.drain()


async def serve_unix_socket(
    handler: Handler,
    listener: socket.socket,
    *,
    max_frame_bytes: int,
    on_ready: Callable[[], None] = lambda: None,
    connect: Connect | None = None,
) -> None:
    with stop_on_signals() as stop:

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await serve_ndjson(
                chunks_of(reader),
                _SocketOutput(writer),
                handler,
                transport="socket",
                max_frame_bytes=max_frame_bytes,
                stop=stop,
                connect=connect,
            )

        await accept_until_stopped(listener, connection, stop=stop, on_ready=on_ready)
