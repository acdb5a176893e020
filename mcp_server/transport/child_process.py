"""A server as a child process speaking NDJSON on stdin/stdout: the upstream side of a gateway.

Bytes only. Stopping it is bounded (end of input, then SIGTERM, then SIGKILL) and it is always reaped;
on Linux it is killed with us should we die first (a replica killed leaves no upstream behind).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..core.settings import SetupError
from ..core.types import Message
from .coalescing import CoalescingTransport
from .ndjson import LineSplitter, read_lines
from .stdio import ChunkReader

__all__ = ["ChildProcess", "Started", "discard", "start_child", "still_read"]

_CHUNK = 65_536
# A child whose frames nobody reads any more (the gateway is stopping, or the client's session
# ended) is waited for at most this long after its input closes, then after SIGTERM: together under
# a second, as a supervisor's grace for the whole gateway is often 2 s. An SDK server exits about
# 0.2 s after the end of its input.
_STOP_AFTER_EOF = 0.6
_STOP_AFTER_SIGTERM = 0.2
_PR_SET_PDEATHSIG = 1  # prctl(2)
# Looked up once, here: between fork and exec the child does as little as it can (other threads'
# locks are not its to take).
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _dies_with(parent: int) -> Callable[[], None] | None:
    """In the child before it runs the command (Linux): SIGKILL when ``parent`` dies, as the kernel
    does not end a process's children with it; exit at once if the parent died already."""
    prctl = _prctl
    if prctl is None:
        return None

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return arm


def still_read(reader: asyncio.Task[Any] | None) -> bool:
    """Whether a side's ``frames`` is still read: a reader cancelled or ended reads no more."""
    return reader is not None and not reader.done() and not reader.cancelling()


class Started(NamedTuple):
    """A child process and our ends of its stdout and stdin, before a ``ChildProcess`` reads them: the
    gateway starts its upstream first, and the upstream boots while the gateway loads."""

    process: asyncio.subprocess.Process
    stdout: int
    stdin: int


async def start_child(command: Sequence[str], env: Mapping[str, str] | None = None) -> Started:
    """Start ``command`` with pipes of our own on its stdin and stdout (a hop fewer per frame than a
    stream reader with a task behind it; uvloop's stdin would be a socket pair) and its stderr to copy."""
    read_end, write_end = os.pipe()
    stdin_read, stdin_write = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=stdin_read,
            stdout=write_end,
            stderr=asyncio.subprocess.PIPE,
            limit=_CHUNK,
            preexec_fn=_dies_with(os.getpid()),
            env=env,
        )
    except OSError as exc:
        os.close(read_end)
        os.close(stdin_write)
        raise SetupError(f"cannot start upstream {command[0]!r}: {exc.strerror}") from None
    finally:
        os.close(write_end)
        os.close(stdin_read)
    return Started(process, read_end, stdin_write)


async def discard(started: Started) -> None:
    """A child started for a run that stopped before it served: our pipes closed, then it is killed
    and reaped."""
    os.close(started.stdin)
    os.close(started.stdout)
    with contextlib.suppress(ProcessLookupError):
        started.process.kill()
    await started.process.wait()


class ChildProcess:
    """A server as a child process speaking NDJSON on its stdin/stdout; its stderr is copied to ours,
    each line through ``redact`` (secrets hidden)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        max_frame_bytes: int,
        grace_seconds: float = 2.0,
        redact: Callable[[str], str] = lambda line: line,
        env: Mapping[str, str] | None = None,
        started: Started | None = None,
    ) -> None:
        """``started``: the child already running (``start_child``), read from ``open`` on."""
        self.redact = redact
        self._started = started
        self.env = None if not env else {**os.environ, **env}  # a client's ``env``: added to ours
        if not command:
            raise SetupError("gateway needs an upstream: `-- <command ...>` or --upstream URL")
        self.command = list(command)
        self.name = " ".join(command)
        self.max_frame_bytes = max_frame_bytes
        self.grace_seconds = grace_seconds
        self.process: asyncio.subprocess.Process | None = None
        self._stdout = ChunkReader()
        self._stderr_task: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task that iterates ``frames``
        self._input = _Input()  # the child's stdin

    async def open(self) -> None:
        """Start the child (unless it was started before) and read its stdout straight into a
        ``ChunkReader``; its stdin written one loop turn at a time."""
        started, self._started = self._started or await start_child(self.command, self.env), None
        self.process = started.process
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: self._stdout, os.fdopen(started.stdout, "rb", buffering=0))
        await loop.connect_write_pipe(lambda: self._input, os.fdopen(started.stdin, "wb", buffering=0))
        self._stderr_task = asyncio.ensure_future(self._copy_stderr())

    async def _copy_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stream = self.process.stderr
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line over the reader's limit: pass it on in pieces
                line = await stream.read(_CHUNK)
            if not line:
                return
            text = self.redact(line.decode("utf-8", "replace").rstrip("\n"))
            sys.stderr.write("upstream: " + text + "\n")
            sys.stderr.flush()

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        """``raw`` on its way: the frames sent in one turn of the loop leave in one write (the child
        wakes once per burst, as a relay's would), then a wait while the child is far behind."""
        self._input.write(raw + b"\n")
        await self._input.drain()  # a slow upstream slows the client down: bounded buffers

    def write_now(self, raw: bytes) -> bool:
        """``send`` without a turn of the event loop, when the pipe's buffer is below its high-water
        mark (what ``drain`` would wait for); ``False``: nothing written, ``send`` it."""
        if not self._input.open or self._input.paused:
            return False
        self._input.write(raw + b"\n")  # behind what this turn holds already: the order is kept
        return True

    def frames(self) -> AsyncIterator[tuple[bytes, int | None]]:
        """The child's lines; the task that asks for them is the one that reads them (``close`` knows it)."""
        self._reader = asyncio.current_task()
        return read_lines(self._stdout.get, LineSplitter(self.max_frame_bytes))

    async def close(self) -> int | None:
        """Stop the child: close its stdin, SIGTERM after the grace period, then SIGKILL. Reaps it."""
        process = self.process
        if process is None:
            return None
        self._input.close()  # what this turn still holds goes first
        for stop, cap in ((None, _STOP_AFTER_EOF), (signal.SIGTERM, _STOP_AFTER_SIGTERM)):
            if stop is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(stop)
            await self._wait_exit(process, cap)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGKILL)
        await process.wait()
        if self._stderr_task is not None:
            cap = self.grace_seconds if still_read(self._reader) else min(self.grace_seconds, _STOP_AFTER_SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stderr_task, cap)
        return process.returncode

    async def _wait_exit(self, process: asyncio.subprocess.Process, cap: float) -> None:
        """Wait for the child to exit: for the grace period while its frames are still read (its last
        answers still reach a client), for ``cap`` seconds at most once they are not."""
        if process.returncode is not None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace_seconds
        exited = asyncio.ensure_future(process.wait())
        try:
            reader = self._reader
            if reader is not None and still_read(reader):
                await asyncio.wait({exited, reader}, timeout=self.grace_seconds, return_when=asyncio.FIRST_COMPLETED)
            remaining = min(deadline - loop.time(), cap)
            if not exited.done() and remaining > 0:
                await asyncio.wait({exited}, timeout=remaining)
        finally:
            exited.cancel()


class _Input(asyncio.Protocol):
    """The child's stdin: writes of one loop turn leave together (``CoalescingTransport``); ``drain``
    waits while the pipe's buffer is past its high-water mark, and raises once the child is gone
    (what the gateway reads as an upstream that no longer takes frames)."""

    def __init__(self) -> None:
        self._transport: CoalescingTransport | None = None
        self.paused = False
        self.open = False  # connected, and neither closed nor lost (a plain flag: read per frame)
        self._lost = False
        self._room: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = CoalescingTransport(transport)  # type: ignore[arg-type]
        self.open = True

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost, self.open = True, False
        self._wake()

    def _wake(self) -> None:
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._lost:
            self._transport.write(data)  # after the end, dropped: ``drain`` says the child is gone

    async def drain(self) -> None:
        while self.paused and not self._lost:
            self._room = asyncio.get_running_loop().create_future()
            try:
                await self._room
            finally:
                self._room = None
        if self._lost:
            raise ConnectionResetError("the upstream closed its input")

    def close(self) -> None:
        self.open = False
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
