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
from typing import Any

from ..core.settings import SetupError
from ..core.types import Message
from .ndjson import LineSplitter, read_lines
from .stdio import ChunkReader

__all__ = ["ChildProcess", "still_read"]

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
    ) -> None:
        self.redact = redact
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

    async def open(self) -> None:
        # The child's stdout is a pipe of our own, read straight into a ``ChunkReader``: a hop fewer
        # per frame than a stream reader with a task behind it.
        read_end, write_end = os.pipe()
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=write_end,
                stderr=asyncio.subprocess.PIPE,
                limit=_CHUNK,
                preexec_fn=_dies_with(os.getpid()),
                env=self.env,
            )
        except OSError as exc:
            os.close(read_end)
            raise SetupError(f"cannot start upstream {self.command[0]!r}: {exc.strerror}") from None
        finally:
            os.close(write_end)
        pipe = os.fdopen(read_end, "rb", buffering=0)
        await asyncio.get_running_loop().connect_read_pipe(lambda: self._stdout, pipe)
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
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        await self.process.stdin.drain()  # a slow upstream slows the client down: bounded buffers

    def write_now(self, raw: bytes) -> bool:
        """``send`` without a turn of the event loop, when the pipe's buffer is below its high-water
        mark (what ``drain`` would wait for); ``False``: nothing written, ``send`` it."""
        stdin = None if self.process is None else self.process.stdin
        if stdin is None or stdin.is_closing():
            return False
        transport = stdin.transport
        if transport.get_write_buffer_size() >= transport.get_write_buffer_limits()[1]:
            return False
        stdin.write(raw + b"\n")
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
        if process.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                process.stdin.close()
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
