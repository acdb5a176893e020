"""A remote MCP server over Streamable HTTP, as a gateway's upstream side: POSTs out, the replies
(JSON or SSE) and the session's GET stream in.

Bytes only: a frame is POSTed as it is; its headers come from the message it was read as
(``about``), never from parsing it. The GET stream is resumed after a drop from the last event id.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from ..core.errors import STATELESS_SINCE
from ..core.settings import SetupError
from ..core.types import NOTIFICATION, REQUEST, Message
from .child_process import still_read

__all__ = ["HttpClient"]

# A dropped GET stream is opened again after this many seconds, doubled per attempt up to the most
# (the server's own ``retry`` wins); ending a session waits this long at most for the DELETE.
_RETRY_FIRST = 0.1
_RETRY_MOST = 5.0
_DELETE_SECONDS = 0.5


def _routed(about: Message | None) -> bool:
    """A request or notification: under 2026-07-28 its method (and name) go in routing headers."""
    return about is not None and (about.kind is REQUEST or about.kind is NOTIFICATION) and about.method is not None


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


class HttpClient:
    """A remote MCP server over Streamable HTTP: one POST per frame (JSON or SSE replies), and the
    session's GET stream for what the server sends outside any request."""

    def __init__(
        self,
        url: str,
        *,
        max_frame_bytes: int,
        grace_seconds: float = 2.0,
        connect_seconds: float = 10.0,
        headers: Mapping[str, str] | None = None,
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
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(connect_seconds, read=None), headers=headers)
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

    async def open(self) -> None:
        return None

    def _headers(self, about: Message | None) -> dict[str, str]:
        """A POST's headers: the session's, the version the frame was read under (the session's
        once negotiated), under 2026-07-28 the routing headers, from the message ``about``, and the
        W3C trace context its ``_meta`` carries (the gateway's span, parent of the call upstream)."""
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        meta = about.params.get("_meta") if about is not None and about.params is not None else None
        if type(meta) is dict and type(meta.get("traceparent")) is str:
            headers["traceparent"] = meta["traceparent"]
            if type(meta.get("tracestate")) is str:
                headers["tracestate"] = meta["tracestate"]
        version = self._version
        if about is not None and about.version is not None and about.method != "initialize":
            version = about.version  # the version it was read under: a stateless request's own
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        if _routed(about) and version is not None and version >= STATELESS_SINCE:  # versions are dates
            assert about is not None and about.method is not None
            headers["Mcp-Method"] = about.method
            params = about.params or {}
            for key in ("name", "uri"):
                if isinstance(params.get(key), str):
                    headers["Mcp-Name"] = params[key]
        return headers

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        if self._session_id is not None and self._listener is None:
            await self._listen_first(about)
        await self._slots.acquire()
        task = asyncio.ensure_future(self._post(raw, self._headers(about)))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _listen_first(self, about: Message | None) -> None:
        """The first frame once the upstream session exists (the client's ``initialized``): the
        session's GET stream opens first, for the time a connection may take at most, so nothing
        the server sends there comes before the stream."""
        if about is not None and about.version is not None:
            self._version = about.version
        self._listener = asyncio.ensure_future(self._listen())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), self._connect_seconds)

    async def _post(self, raw: bytes, headers: Mapping[str, str]) -> None:
        try:
            async with self._client.stream("POST", self.url, content=raw, headers=headers) as response:
                session_id = response.headers.get("mcp-session-id")
                if session_id:
                    self._session_id = session_id
                kind = response.headers.get("content-type", "")
                if response.status_code == 202:
                    return  # a notification or response was accepted: nothing comes back
                if kind.startswith("text/event-stream"):
                    async for data, _, _ in _sse_events(response):
                        if data.strip():  # events without data (priming, retry hints) carry no frame
                            await self._queue.put(data.encode())
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

    async def frames(self) -> AsyncIterator[tuple[bytes, int | None]]:
        self._reader = asyncio.current_task()
        while True:
            body = await self._queue.get()
            if body is None:
                return
            yield (body, None) if len(body) <= self.max_frame_bytes else (b"", len(body))

    async def _drain(self) -> None:
        """Let the requests in flight finish while their replies are still read, for the grace period
        at most (a STDIO client that closed its input still gets its answers)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace_seconds
        while self._inflight and still_read(self._reader) and self._reader is not None and loop.time() < deadline:
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
        if still_read(self._reader):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.put(None), self.grace_seconds)
        return 0
