"""The server behind the gateway: a STDIO subprocess or a remote Streamable HTTP endpoint.

An upstream moves raw frames only: ``send`` one frame, iterate ``frames`` for what comes back
(replies, and what the server sends on its own).
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

from ..core import jsonio
from ..core.settings import SetupError
from ..execution.redaction import Redactor
from ..registry.versions import PROTOCOL_VERSION_META
from ..transport.ndjson import LineSplitter
from ..transport.stdio import ChunkReader

__all__ = ["HttpUpstream", "StdioUpstream", "Upstream"]

_CHUNK = 65_536
# A dropped GET stream is opened again after this many seconds, doubled per attempt up to the most
# (the server's own ``retry`` wins); ending a session waits this long at most for the DELETE.
_RETRY_FIRST = 0.1
_RETRY_MOST = 5.0
_DELETE_SECONDS = 0.5
# An upstream whose frames nobody reads any more (the gateway is stopping, or the client's session
# ended) is waited for at most this long after its input closes, then after SIGTERM: together under
# a second, as a supervisor's grace for the whole gateway is often 2 s. An SDK server exits about
# 0.2 s after the end of its input.
_STOP_AFTER_EOF = 0.6
_STOP_AFTER_SIGTERM = 0.2


def _still_read(reader: asyncio.Task[Any] | None) -> bool:
    """Whether an upstream's ``frames`` is still read: a reader cancelled or ended reads no more."""
    return reader is not None and not reader.done() and not reader.cancelling()


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
        self._reader: asyncio.Task[Any] | None = None  # the task that iterates ``frames``

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
        self._reader = asyncio.current_task()
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
            cap = self.grace_seconds if _still_read(self._reader) else min(self.grace_seconds, _STOP_AFTER_SIGTERM)
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
            if reader is not None and _still_read(reader):
                await asyncio.wait({exited, reader}, timeout=self.grace_seconds, return_when=asyncio.FIRST_COMPLETED)
            remaining = min(deadline - loop.time(), cap)
            if not exited.done() and remaining > 0:
                await asyncio.wait({exited}, timeout=remaining)
        finally:
            exited.cancel()


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str | None, int | None]]:
    """The events of an SSE body as ``(data, last event id, retry ms)`` (WHATWG HTML, "Interpreting an
    event stream"). An event without data (a priming event, a retry hint) comes with ``""``; the
    last event id is the stream's so far, the retry the one this event named."""
    data: list[str] = []
    event_id: str | None = None
    retry: int | None = None
    async for line in response.aiter_lines():
        if not line:
            yield "\n".join(data), event_id, retry
            data, retry = [], None
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            event_id = value or None
        elif name == "retry" and value.isdigit():
            retry = int(value)
    if data:  # an event the server did not end before closing
        yield "\n".join(data), event_id, retry


def _negotiated(frame: bytes) -> str | None:
    """The protocol version an ``initialize`` result names (``None`` for any other frame)."""
    try:
        document = jsonio.loads(frame)
    except jsonio.JSONSyntaxError:
        return None
    result = document.get("result") if isinstance(document, dict) else None
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return version if isinstance(version, str) else None


class HttpUpstream:
    """A remote MCP server over Streamable HTTP: one POST per frame (JSON or SSE replies), and the
    session's GET stream for what the server sends outside any request."""

    def __init__(
        self, url: str, *, max_frame_bytes: int, grace_seconds: float = 2.0, connect_seconds: float = 10.0
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise SetupError(f"--upstream must be an http(s) URL, got {url!r}")
        self.name = url
        self.url = url
        self.max_frame_bytes = max_frame_bytes
        self.grace_seconds = grace_seconds
        # A reply's SSE stream and the GET stream may be quiet for as long as the server likes: no
        # read timeout (a whole-request one ended the upstream session mid-stream); connecting,
        # writing and waiting for a connection are bounded.
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(connect_seconds, read=None))
        self._connect_seconds = connect_seconds
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=64)
        self._session_id: str | None = None
        self._version: str | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(32)  # at most this many requests in flight: backpressure
        self._reader: asyncio.Task[Any] | None = None  # the task that iterates ``frames``
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()  # the GET stream was answered (or could not be)
        self._last_event_id: str | None = None
        self._server_retry: float | None = None  # seconds, from the server's SSE ``retry`` field

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
                    async for data, _, _ in _sse_events(response):
                        if data.strip():  # events without data (priming, retry hints) carry no frame
                            await self._deliver(data.encode())
                elif kind.startswith("application/json"):
                    body = await response.aread()
                    if body.strip():
                        await self._deliver(body)
                elif response.status_code >= 400:
                    body = await response.aread()
                    sys.stderr.write(f"upstream: HTTP {response.status_code}: {body[:200]!r}\n")
        except httpx.HTTPError as exc:
            sys.stderr.write(f"upstream: {type(exc).__name__}: {exc}\n")
            await self._queue.put(None)
        finally:
            self._slots.release()

    async def _deliver(self, frame: bytes) -> None:
        """A frame for ``frames``. The first once the upstream session exists (the reply to
        ``initialize`` carried its id) waits until the session's GET stream is open, for the time a
        connection may take at most: nothing the server sends there comes before the stream."""
        if self._listener is None and self._session_id is not None:
            self._version = _negotiated(frame) or self._version
            self._listener = asyncio.ensure_future(self._listen())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._listening.wait(), self._connect_seconds)
        await self._queue.put(frame)

    async def _listen(self) -> None:
        """The session's GET stream (spec: transports, "Listening for Messages from the Server"),
        kept open: after a drop or a failure it is opened again, from the last event id the server
        gave, after the server's ``retry`` or a backoff doubling up to ``_RETRY_MOST``. It ends when
        the server offers none (405) or the session is gone (404)."""
        backoff = _RETRY_FIRST
        while True:
            try:
                status, carried = await self._listen_once()
            except httpx.HTTPError as exc:
                status, carried = f"{type(exc).__name__}: {exc}", False
            finally:
                self._listening.set()
            if status in (404, 405):
                return
            if carried:
                backoff = _RETRY_FIRST
            else:
                if backoff == _RETRY_FIRST and status != 200:  # the first failure in a row is told
                    sys.stderr.write(f"upstream: GET stream: {'HTTP ' if isinstance(status, int) else ''}{status}\n")
                backoff = min(backoff * 2, _RETRY_MOST)
            await asyncio.sleep(self._server_retry if self._server_retry is not None else backoff)

    async def _listen_once(self) -> tuple[int | str, bool]:
        """One GET stream, until it ends; its frames join ``frames``. Returns its HTTP status (a
        description when it was no event stream) and whether it carried an event."""
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": str(self._session_id)}
        if self._version is not None:
            headers["MCP-Protocol-Version"] = self._version
        if self._last_event_id is not None:
            headers["Last-Event-ID"] = self._last_event_id
        async with self._client.stream("GET", self.url, headers=headers) as response:
            self._listening.set()
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                status = response.status_code
                return (status if status != 200 else "HTTP 200 without an event stream"), False
            carried = False
            async for data, event_id, retry in _sse_events(response):
                carried = True
                self._last_event_id = event_id or self._last_event_id
                if retry is not None:
                    self._server_retry = retry / 1000  # "The client MUST respect the retry field"
                if data.strip():
                    await self._queue.put(data.encode())
            return response.status_code, carried

    def note_version(self, version: str | None) -> None:
        self._version = version

    async def frames(self) -> AsyncIterator[tuple[bytes, int]]:
        self._reader = asyncio.current_task()
        while True:
            body = await self._queue.get()
            if body is None:
                return
            yield (body, len(body)) if len(body) <= self.max_frame_bytes else (b"", len(body))

    async def _drain(self) -> None:
        """Let the requests in flight finish while their replies are still read, for the grace period
        at most (a STDIO client that closed its input still gets its answers)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace_seconds
        while self._inflight and _still_read(self._reader) and self._reader is not None and loop.time() < deadline:
            waiting = {*self._inflight, self._reader}
            await asyncio.wait(waiting, timeout=deadline - loop.time(), return_when=asyncio.FIRST_COMPLETED)

    async def close(self) -> int | None:
        """End the upstream session: the requests in flight finish while their replies are still read
        (``_drain``), the rest stop at once with the GET stream, the session is deleted, ``frames`` ends."""
        await self._drain()
        for task in [*self._inflight, *([self._listener] if self._listener is not None else [])]:
            task.cancel()
        if self._session_id is not None:
            with contextlib.suppress(httpx.HTTPError):
                headers = {"Mcp-Session-Id": self._session_id}
                await self._client.delete(self.url, headers=headers, timeout=_DELETE_SECONDS)
        await self._client.aclose()
        if _still_read(self._reader):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.put(None), self.grace_seconds)
        return 0
