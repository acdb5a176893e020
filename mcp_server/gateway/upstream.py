"""The server behind the gateway: a STDIO subprocess or a remote Streamable HTTP endpoint.

An upstream moves raw frames only: ``send`` one frame, iterate ``frames`` for what comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

import httpx

from ..core.settings import SetupError
from ..execution.redaction import Redactor
from ..registry.versions import PROTOCOL_VERSION_META
from ..transport.ndjson import LineSplitter
from ..transport.stdio import ChunkReader

__all__ = ["HttpUpstream", "StdioUpstream", "Upstream"]

_CHUNK = 65_536


class Upstream(Protocol):
    name: str

    async def start(self) -> None: ...

    async def send(self, raw: bytes, document: Mapping[str, Any] | None) -> None: ...

    def frames(self) -> AsyncIterator[tuple[bytes, int]]: ...

    async def close(self) -> int | None: ...


class StdioUpstream:
    """An MCP server as a child process speaking NDJSON on its stdin/stdout."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        max_frame_bytes: int,
        grace_seconds: float = 2.0,
        redactor: Redactor | None = None,
    ) -> None:
        """``redactor`` hides secrets in the child's stderr as it is copied (default patterns without one)."""
        self.redactor = redactor or Redactor.build()
        if not command:
            raise SetupError("gateway needs an upstream: `-- <command ...>` or --upstream URL")
        self.command = list(command)
        self.name = " ".join(command)
        self.max_frame_bytes = max_frame_bytes
        self.grace_seconds = grace_seconds
        self.process: asyncio.subprocess.Process | None = None
        self._stdout = ChunkReader()
        self._stderr_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
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
            text, _ = self.redactor.redact_text(line.decode("utf-8", "replace").rstrip("\n"))
            sys.stderr.write("upstream: " + text + "\n")
            sys.stderr.flush()

    async def send(self, raw: bytes, document: Mapping[str, Any] | None) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        await self.process.stdin.drain()  # a slow upstream slows the client down: bounded buffers

    async def frames(self) -> AsyncIterator[tuple[bytes, int]]:
        splitter = LineSplitter(self.max_frame_bytes)
        while True:
            chunk = await self._stdout.get()
            for line in splitter.feed(chunk) if chunk else splitter.close():
                yield line
            if not chunk:
                return

    async def close(self) -> int | None:
        """Stop the child: close its stdin, SIGTERM after the grace period, then SIGKILL. Reaps it."""
        process = self.process
        if process is None:
            return None
        if process.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                process.stdin.close()
        for stop in (None, signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None:
                break
            if stop is not None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(stop)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), self.grace_seconds)
        await process.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stderr_task, self.grace_seconds)
        return process.returncode


class HttpUpstream:
    """A remote MCP server over Streamable HTTP: one POST per frame, JSON or SSE replies."""

    def __init__(self, url: str, *, max_frame_bytes: int, timeout: float = 60.0, grace_seconds: float = 2.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise SetupError(f"--upstream must be an http(s) URL, got {url!r}")
        self.name = url
        self.url = url
        self.max_frame_bytes = max_frame_bytes
        self.grace_seconds = grace_seconds
        self._client = httpx.AsyncClient(timeout=timeout)
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=64)
        self._session_id: str | None = None
        self._version: str | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(32)  # at most this many requests in flight: backpressure

    async def start(self) -> None:
        return None

    def _headers(self, document: Mapping[str, Any] | None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        params = document.get("params") if document is not None else None
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        stated = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, Mapping) else None
        version = stated if isinstance(stated, str) else self._version
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        if isinstance(stated, str) and document is not None and isinstance(document.get("method"), str):
            headers["Mcp-Method"] = document["method"]  # 2026-07-28 routing headers
            for key in ("name", "uri"):
                if isinstance(params, Mapping) and isinstance(params.get(key), str):
                    headers["Mcp-Name"] = params[key]
        return headers

    async def send(self, raw: bytes, document: Mapping[str, Any] | None) -> None:
        await self._slots.acquire()
        task = asyncio.ensure_future(self._post(raw, document))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _post(self, raw: bytes, document: Mapping[str, Any] | None) -> None:
        try:
            async with self._client.stream("POST", self.url, content=raw, headers=self._headers(document)) as response:
                session_id = response.headers.get("mcp-session-id")
                if session_id:
                    self._session_id = session_id
                kind = response.headers.get("content-type", "")
                if response.status_code == 202:
                    return  # a notification or response was accepted: nothing comes back
                if kind.startswith("text/event-stream"):
                    data: list[str] = []
                    async for line in response.aiter_lines():
                        if line.startswith("data:"):
                            data.append(line[5:].removeprefix(" "))
                        elif line == "":
                            await self._event(data)
                            data = []
                    await self._event(data)
                elif kind.startswith("application/json"):
                    body = await response.aread()
                    if body.strip():
                        await self._queue.put(body)
                elif response.status_code >= 400:
                    body = await response.aread()
                    sys.stderr.write(f"upstream: HTTP {response.status_code}: {body[:200]!r}\n")
        except httpx.HTTPError as exc:
            sys.stderr.write(f"upstream: {type(exc).__name__}: {exc}\n")
            await self._queue.put(None)
        finally:
            self._slots.release()

    async def _event(self, data: list[str]) -> None:
        """One SSE event's data as a frame; events without data (priming, retry hints) carry none."""
        text = "\n".join(data)
        if text.strip():
            await self._queue.put(text.encode())

    def note_version(self, version: str | None) -> None:
        self._version = version

    async def frames(self) -> AsyncIterator[tuple[bytes, int]]:
        while True:
            body = await self._queue.get()
            if body is None:
                return
            yield (body, len(body)) if len(body) <= self.max_frame_bytes else (b"", len(body))

    async def close(self) -> int | None:
        """Let the requests in flight finish (for a grace period), end the session, end ``frames``."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=self.grace_seconds)
        for task in list(self._inflight):
            task.cancel()
        if self._session_id is not None:
            with contextlib.suppress(httpx.HTTPError):
                await self._client.delete(self.url, headers={"Mcp-Session-Id": self._session_id})
        await self._client.aclose()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.put(None), self.grace_seconds)
        return 0
