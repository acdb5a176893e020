"""A remote MCP server over Streamable HTTP, as a gateway's upstream side: POSTs out, the replies
(JSON or SSE) and the session's GET stream in.

Bytes only: a frame is POSTed as it is; its headers come from the message it was read as
(``about``), never from parsing it. What comes back on a request's POST is handed on with that
request's id, so a reply whose own id is missing or wrong is still known as its answer (ADR 25). A
notification or a response is acknowledged before the next frame is sent: the client's order kept.
The GET stream is resumed after a drop from the last event id.
Credentials come from the upstream's own configuration (``headers``, an ``Authorizer``), or in
passthrough mode from the client's request (``FORWARDED_AUTHORIZATION``); a 401 or 403 answers the
request it refused at once (issue 31), after one renewal of the credential when one is possible.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from contextvars import ContextVar
from typing import Any, Protocol

import httpx

from ..core.errors import STATELESS_SINCE, CanonicalError, Rejection
from ..core.oversize import excerpt
from ..core.replies import error_reply
from ..core.settings import SetupError
from ..core.types import NOTIFICATION, REQUEST, Message, RequestId
from .child_process import still_read
from .connection import Received

__all__ = ["FORWARDED_AUTHORIZATION", "Authorizer", "HttpClient"]

FORWARDED_AUTHORIZATION: ContextVar[str | None] = ContextVar("forwarded_authorization", default=None)
"""Passthrough mode: the ``Authorization`` of the client request being handled (the HTTP front sets
it), sent upstream with what that request makes the gateway send."""

# What an upstream's refusal of the credentials is to the request it refused.
_REFUSALS = {
    member.http_status: member for member in (CanonicalError.UPSTREAM_UNAUTHORIZED, CanonicalError.UPSTREAM_FORBIDDEN)
}


class Authorizer(Protocol):
    """Where the upstream's bearer token comes from when the gateway logs in to it itself."""

    def authorization(self) -> str | None:
        """The ``Authorization`` value to send now (``None``: none yet)."""

    async def renew(self, rejected: str | None, status: int, challenge: str | None) -> bool:
        """The upstream refused ``rejected`` (what was sent) with ``status`` and its ``WWW-Authenticate``
        ``challenge``: get another credential; ``False`` when none can be had."""


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
        authorizer: Authorizer | None = None,
        forward_authorization: bool = False,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise SetupError(f"--upstream must be an http(s) URL, got {url!r}")
        self.name = url
        self.url = url
        self._configured = dict(headers or {})  # credentials of the upstream's own configuration
        self._authorizer = authorizer
        self._forwarding = forward_authorization
        self._forwarded: str | None = None  # passthrough: the client's latest, for the GET stream and DELETE
        self.max_frame_bytes = max_frame_bytes
        self.grace_seconds = grace_seconds
        # A reply's SSE stream and the GET stream may be quiet for as long as the server likes: no
        # read timeout (a whole-request one ended the upstream session mid-stream); connecting,
        # writing and waiting for a connection are bounded.
        self._client: httpx.AsyncClient | None = None  # made on first use (``_http``): a check of the URL makes none
        self._connect_seconds = connect_seconds
        # What came back, and the id of the request whose POST's response carried it (``None``: the GET stream).
        self._queue: asyncio.Queue[tuple[bytes, RequestId | None] | None] = asyncio.Queue(maxsize=64)
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

    @property
    def _http(self) -> httpx.AsyncClient:
        """The HTTP client, made once. Certificates are read for an ``https`` upstream only (40 ms or
        more): every request goes to ``url`` and no redirect is followed, so a plain ``http`` one
        never makes a TLS connection."""
        if self._client is None:
            timeout = httpx.Timeout(self._connect_seconds, read=None)
            self._client = httpx.AsyncClient(timeout=timeout, verify=self.url.startswith("https://"))
        return self._client

    def _headers(self, about: Message | None) -> dict[str, str]:
        """A POST's headers: the session's, the version the frame was read under (the session's
        once negotiated), under 2026-07-28 the routing headers, from the message ``about``, and the
        W3C trace context its ``_meta`` carries (the gateway's span, parent of the call upstream)."""
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        headers.update(self._credentials())
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

    def _credentials(self) -> dict[str, str]:
        """The configured headers, with the ``Authorization`` of the login or the client (passthrough)."""
        headers = dict(self._configured)
        authorization = None
        if self._forwarding:
            authorization = self._forwarded = FORWARDED_AUTHORIZATION.get() or self._forwarded
        elif self._authorizer is not None:
            authorization = self._authorizer.authorization()
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def _tell(self, line: str) -> None:
        """A line on stderr, without the credentials sent (an upstream may echo them in an error)."""
        sent = [*self._configured.values(), *self._credentials().values()]
        secrets = {part for value in sent for part in (value, value.rsplit(" ", 1)[-1]) if len(part) >= 8}
        for secret in sorted(secrets, key=len, reverse=True):
            line = line.replace(secret, "[REDACTED]")
        sys.stderr.write(f"upstream: {line}\n")

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        """POST one frame. A request's reply comes later (its POST runs on); a notification or a
        response is acknowledged before this returns, so the next frame cannot overtake it (the
        upstream may take requests on several connections at once)."""
        if self._session_id is not None and self._listener is None:
            await self._listen_first(about)
        await self._slots.acquire()
        if about is None or about.kind is not REQUEST:
            return await self._post(raw, self._headers(about), about)
        task = asyncio.ensure_future(self._post(raw, self._headers(about), about))
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

    async def _post(self, raw: bytes, headers: Mapping[str, str], about: Message | None) -> None:
        """One frame POSTed; a refusal of the credentials renews them once (a login's token that
        expired) and tries again, else answers the request it refused."""
        request_id = about.id if about is not None and about.kind is REQUEST else None
        try:
            refused = await self._exchange(raw, headers, request_id)
            if refused is not None and await self._renewed(refused, headers.get("Authorization")):
                refused = await self._exchange(raw, {**headers, **self._credentials()}, request_id)
            if refused is not None:
                await self._refused(*refused, about)
        except httpx.HTTPError as exc:
            self._tell(f"{type(exc).__name__}: {exc}")
            await self._queue.put(None)
        finally:
            self._slots.release()

    async def _exchange(
        self, raw: bytes, headers: Mapping[str, str], request_id: RequestId | None
    ) -> tuple[int, str | None] | None:
        """One POST; what its response carries joins ``frames`` with ``request_id`` (the request it
        carried). An HTTP error without a JSON-RPC body on a request's POST still comes back, as the
        text it was, for the request not to wait for an answer that will never come. A refusal of the
        credentials comes back as its status and challenge (``WWW-Authenticate``)."""
        async with self._http.stream("POST", self.url, content=raw, headers=headers) as response:
            if response.status_code in _REFUSALS:
                return response.status_code, response.headers.get("www-authenticate")
            session_id = response.headers.get("mcp-session-id")
            if session_id:
                self._session_id = session_id
            kind = response.headers.get("content-type", "")
            if response.status_code == 202:
                return None  # a notification or response was accepted: nothing comes back
            if kind.startswith("text/event-stream"):
                async for data, _, _ in _sse_events(response):
                    if data.strip():  # events without data (priming, retry hints) carry no frame
                        await self._queue.put((data.encode(), request_id))
            elif kind.startswith("application/json"):
                body = await response.aread()
                if body.strip():
                    await self._queue.put((body, request_id))
            elif response.status_code >= 400:
                body = await response.aread()
                self._tell(f"HTTP {response.status_code}: {body[:200]!r}")
                if request_id is not None:
                    await self._queue.put((body.strip() or f"HTTP {response.status_code}".encode(), request_id))
        return None

    async def _renewed(self, refused: tuple[int, str | None], sent: str | None) -> bool:
        """Whether a new credential may answer this refusal: a 401, or a 403 asking for more scope
        (MCP authorization, "Scope Challenge Handling"), when the gateway logs in itself."""
        status, challenge = refused
        step_up = status == CanonicalError.UPSTREAM_FORBIDDEN.http_status and "insufficient_scope" in (challenge or "")
        if self._authorizer is None or self._forwarding:
            return False
        if status != CanonicalError.UPSTREAM_UNAUTHORIZED.http_status and not step_up:
            return False
        return await self._authorizer.renew(sent, status, challenge)

    async def _refused(self, status: int, challenge: str | None, about: Message | None) -> None:
        """The upstream refused the credentials: the request is answered at once with what it asked
        for (never a time-out); a notification or a response cannot be answered, so it is told."""
        member = _REFUSALS[status]
        what = "requires authorization" if member is CanonicalError.UPSTREAM_UNAUTHORIZED else "refused access"
        said = f"the server {what}: {challenge}" if challenge else f"the server {what} (HTTP {status}, no challenge)"
        if about is None or about.kind is not REQUEST or about.id is None:
            self._tell(said)
            return
        extra = {"status": status, "challenge": challenge or ""}
        rejection = Rejection(member, [{"path": "", "msg": said}], extra=extra)
        await self._queue.put((error_reply(rejection, about.id, about.version).to_bytes(), about.id))

    async def _listen(self) -> None:
        """The session's GET stream (spec: transports, "Listening for Messages from the Server"),
        kept open: after a drop or a failure it is opened again, from the last event id the server
        gave, after the server's ``retry`` or a backoff doubling up to ``_RETRY_MOST``. It ends when
        the server offers none (405) or the session is gone (404)."""
        backoff = _RETRY_FIRST
        while True:
            credentials = self._credentials()
            try:
                status, carried = await self._listen_once(credentials)
            except httpx.HTTPError as exc:
                status, carried = f"{type(exc).__name__}: {exc}", False
            finally:
                self._listening.set()
            if status in (404, 405):
                return
            if status in _REFUSALS and not await self._renewed((status, None), credentials.get("Authorization")):
                self._tell(f"GET stream: HTTP {status}: the server refused the credentials")
                return
            if carried:
                backoff = _RETRY_FIRST
            else:
                if backoff == _RETRY_FIRST and status != 200:  # the first failure in a row is told
                    self._tell(f"GET stream: {'HTTP ' if isinstance(status, int) else ''}{status}")
                backoff = min(backoff * 2, _RETRY_MOST)
            await asyncio.sleep(self._server_retry if self._server_retry is not None else backoff)

    async def _listen_once(self, credentials: Mapping[str, str]) -> tuple[int | str, bool]:
        """One GET stream, until it ends; its frames join ``frames``. Returns its HTTP status (a
        description when it was no event stream) and whether it carried an event."""
        headers = {**credentials, "Accept": "text/event-stream", "Mcp-Session-Id": str(self._session_id)}
        if self._version is not None:
            headers["MCP-Protocol-Version"] = self._version
        if self._last_event_id is not None:
            headers["Last-Event-ID"] = self._last_event_id
        async with self._http.stream("GET", self.url, headers=headers) as response:
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
                    await self._queue.put((data.encode(), None))
            return response.status_code, carried

    async def frames(self) -> AsyncIterator[Received]:
        self._reader = asyncio.current_task()
        while True:
            item = await self._queue.get()
            if item is None:
                return
            body, request_id = item
            size = None if len(body) <= self.max_frame_bytes else len(body)
            raw = body if size is None else excerpt(body)
            yield (raw, size) if request_id is None else (raw, size, request_id)

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
                headers = {**self._credentials(), "Mcp-Session-Id": self._session_id}
                await self._http.delete(self.url, headers=headers, timeout=_DELETE_SECONDS)
        if self._client is not None:
            await self._client.aclose()
        if still_read(self._reader):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.put(None), self.grace_seconds)
        return 0
