"""A handshake-era client (``initialize``, a session) to an upstream that speaks only a stateless
version (2026-07-28): the session the client expects held, each frame translated, a client of the
upstream's own era passed through. It never checks the client's side (the gateway session does).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ...core import jsonio
from ...core.errors import Rejection
from ...core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Message,
    RequestId,
    is_request_id,
)
from ...ledger.verdicts import answer_in_place, refused_reply
from ...registry.schemas import SchemaRegistry
from ...registry.versions import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LOG_LEVEL_META,
    PROTOCOL_VERSION_META,
    SERVER_INFO_META,
    stateless_version,
)
from ...transport.connection import Connection, Received
from ...transport.outbox import Outbox
from ..session import GatewayRun
from .upstream_side import ASKS, UpstreamSide, not_bridgeable

__all__ = ["StatelessUpstream"]

_RESERVED = "io.modelcontextprotocol/"  # result ``_meta`` keys of the stateless era: no place before it
MAX_ROUNDS = 8  # input rounds one request may take before the bridge gives up on it


@cache
def _only_stateless(registry: SchemaRegistry, old: str, new: str) -> frozenset[str]:
    """The result fields ``new`` has and ``old`` has not (resultType, ttlMs, cacheScope): removed."""
    before, after = registry.protocol(old).definitions, registry.protocol(new).definitions
    return frozenset(
        name
        for key, definition in after.items()
        if key.endswith("Result") and key in before
        for name in definition.get("properties", {})
        if name not in before[key].get("properties", {})
    )


@cache
def _known(registry: SchemaRegistry, version: str, definition: str) -> frozenset[str]:
    """The properties ``definition`` names at ``version`` (capabilities: the ones it knows)."""
    return frozenset(registry.protocol(version).definitions[definition].get("properties", {}))


def _older(result: Mapping[str, Any], drop: frozenset[str]) -> dict[str, Any]:
    """A stateless result as the older era has it: its own fields and reserved ``_meta`` keys gone."""
    kept = {key: value for key, value in result.items() if key not in drop}
    meta = kept.get("_meta")
    if type(meta) is dict:
        own = {key: value for key, value in meta.items() if not key.startswith(_RESERVED)}
        if own:
            kept["_meta"] = own
        else:
            del kept["_meta"]
    return kept


@dataclass(slots=True)
class _Call:
    """A client request carried upstream: its own id and method, the params sent (the envelope in,
    no input answers), and its input rounds so far."""

    client_id: RequestId
    method: str
    params: dict[str, Any]
    upstream_id: RequestId = 0
    rounds: int = 0
    waiting: set[str] = field(default_factory=set)  # input keys the client has yet to answer
    answers: dict[str, Any] = field(default_factory=dict)
    state: str | None = None


class StatelessUpstream:
    """The gateway session's upstream: handshake-era clients translated to the stateless ``version``."""

    def __init__(self, inner: Connection, run: GatewayRun, version: str, *, server: str | None = None) -> None:
        self.name = inner.name
        self._inner, self._checks, self._version = inner, run, version
        self._server = server  # an aggregate's server: its report section
        self._registry = run.registry
        self._passthrough: bool | None = None  # decided by the client's first frame
        self._decided = asyncio.Event()
        self._side: UpstreamSide | None = None
        self._out = Outbox()  # frames for the client (bridge mode)
        # Translation state, not a second ledger: the side's ``Session`` expects and settles each request
        # upstream (its method, tool and version); these tables say which client call it carries, its
        # input round, and which of the bridge's questions to the client answers which input.
        self._calls: dict[RequestId, _Call] = {}  # by the upstream id of its request in flight
        self._live: dict[RequestId, _Call] = {}  # by the client's id, until answered
        self._asked: dict[str, tuple[_Call, str]] = {}  # the bridge's request to the client → its call, key
        self._ids = itertools.count(1)  # the bridge's request ids upstream
        self._asks = itertools.count(1)  # and of its requests to the client
        self._client_version = self._registry.latest_handshake
        self._envelope: dict[str, Any] = {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: {}}
        self._capabilities: Mapping[str, Any] = {}
        self._drop = _only_stateless(self._registry, self._client_version, version)

    async def open(self) -> None:
        await self._inner.open()

    # -- frames for the client ----------------------------------------------------------------

    async def frames(self) -> AsyncIterator[Received]:
        await self._decided.wait()
        if self._passthrough:
            async for item in self._inner.frames():
                yield item
            return
        if self._side is None:
            return  # closed before the client said anything
        reader = asyncio.ensure_future(self._read_upstream())
        try:
            while (raw := await self._out.get()) is not None:
                yield raw, None
        finally:
            reader.cancel()

    async def _read_upstream(self) -> None:
        try:
            async for raw, size, *_ in self._inner.frames():  # (the bridge reads replies by its own ids)
                await self._heard(raw, size)
                await self._out.room()  # the client reads slower: the upstream is read no faster
        finally:
            self._out.put_nowait(None)

    def _emit(self, document: Mapping[str, Any]) -> None:
        self._out.put_nowait(jsonio.dumps(document))

    def _answer(self, client_id: RequestId, result: Mapping[str, Any]) -> None:
        self._emit({"jsonrpc": "2.0", "id": client_id, "result": result})

    def _refuse(self, client_id: RequestId, method: str | None, rejection: Rejection) -> None:
        """The client's request ``client_id`` answered with ``rejection``, at the client's version."""
        self._live.pop(client_id, None)
        reply = answer_in_place(self._registry, rejection, client_id, method, self._client_version)
        self._out.put_nowait(reply.to_bytes())

    # -- frames from the client ---------------------------------------------------------------

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        if self._passthrough is None:
            self._decide(about)
        if self._passthrough:
            await self._inner.send(raw, about)
            return
        if about is None:
            return  # not JSON-RPC: the session refused it already; nothing to translate
        if about.kind is REQUEST:
            await self._out.room()  # a client that does not read what it is sent is read no further
            await self._request(about)  # the gateway's own (``tools/list``) comes without its document
        elif about.kind is NOTIFICATION:
            await self._notification(raw, about)
        else:
            await self._client_answered(
                about if about.document is not None else about._replace(document=jsonio.loads(raw))
            )

    def _decide(self, about: Message | None) -> None:
        """A first frame that states the upstream's own era passes through, with all after it."""
        stated = (
            stateless_version(about.params, self._registry) if about is not None and about.kind is REQUEST else None
        )
        self._passthrough = stated is not None
        if not self._passthrough:
            self._side = UpstreamSide(self._checks, self._inner.name, server=self._server)
            self._checks.report.negotiated(self._side.session, self._version)  # no handshake says it there
        self._decided.set()

    async def _request(self, about: Message) -> None:
        method = original = about.method
        client_id = about.id
        assert method is not None and original is not None and client_id is not None
        params = dict(about.params or {})
        if method == "initialize":
            self._initialize(params)
            method, params = "server/discover", {}
        elif method == "ping":
            return self._answer(client_id, {})  # no ping in 2026-07-28: the bridge is the peer that answers
        elif method == "logging/setLevel":
            self._envelope[LOG_LEVEL_META] = params.get("level")  # every later request opts in
            return self._answer(client_id, {})
        elif method not in self._registry.protocol(self._version).request_methods:
            return self._refused(client_id, method, method)
        elif "task" in params:
            return self._refused(client_id, method, "tasks")
        call = _Call(client_id, original, params)
        call.params["_meta"] = {**(params.get("_meta") or {}), **self._envelope}
        self._live[client_id] = call
        await self._send_call(call, method)

    def _refused(self, client_id: RequestId, method: str, feature: str) -> None:
        """What has no counterpart upstream: recorded, and the client's request answered NOT_BRIDGEABLE naming it."""
        assert self._side is not None
        self._side.untranslated(Message(REQUEST, client_id, method), feature, CLIENT_TO_SERVER, "refused")
        self._refuse(client_id, method, not_bridgeable(feature))

    def _initialize(self, params: Mapping[str, Any]) -> None:
        """What the client declares once, sent with each of its requests (2026-07-28 per-request ``_meta``)."""
        offered = params.get("protocolVersion")
        if offered in self._registry.handshake_versions:
            self._client_version = offered
        self._drop = _only_stateless(self._registry, self._client_version, self._version)
        declared = params.get("capabilities")
        self._capabilities = declared if isinstance(declared, Mapping) else {}
        known = _known(self._registry, self._version, "ClientCapabilities")
        capabilities = {key: value for key, value in self._capabilities.items() if key in known}
        if isinstance(capabilities.get("roots"), Mapping):
            capabilities["roots"] = {}  # listChanged: no notification of it reaches a stateless server
        self._envelope[CLIENT_CAPABILITIES_META] = capabilities
        if isinstance(params.get("clientInfo"), Mapping):
            self._envelope[CLIENT_INFO_META] = params["clientInfo"]

    async def _send_call(self, call: _Call, method: str | None = None) -> None:
        """The call's request upstream (again, for a retry), checked at the upstream's version."""
        assert self._side is not None
        call.upstream_id = next(self._ids)
        document = {"jsonrpc": "2.0", "id": call.upstream_id, "method": method or call.method, "params": call.params}
        try:
            raw, message = self._side.sending(document)
        except Rejection as rejection:
            return self._refuse(call.client_id, call.method, rejection)
        self._calls[call.upstream_id] = call
        with contextlib.suppress(ConnectionError, OSError):  # gone: its end answers what is pending
            await self._inner.send(raw, message)

    async def _notification(self, raw: bytes, about: Message) -> None:
        """``initialized`` is the bridge's; a cancellation goes to the request in flight; anything
        else has no counterpart upstream and is recorded as refused (a notification has no answer)."""
        assert self._side is not None
        if about.method == "notifications/initialized":
            return
        if about.method == "notifications/cancelled":
            request_id = (about.params or {}).get("requestId")
            call = self._live.pop(request_id, None) if is_request_id(request_id) else None
            if call is not None and self._calls.pop(call.upstream_id, None) is not None:
                await self._cancel(call, about)
            elif call is not None:
                self._forget_round(call)
            return
        self._side.untranslated(about, about.method or "notification", CLIENT_TO_SERVER, "dropped", raw)

    async def _cancel(self, call: _Call, about: Message) -> None:
        """The call's request upstream cancelled: the ledger's rule for a cancellation sent settles it
        (its reply, should it come, is late), as for the gateway's own."""
        assert self._side is not None
        params = {**(about.params or {}), "requestId": call.upstream_id}
        with contextlib.suppress(Rejection, ConnectionError, OSError):
            raw, message = self._side.sending({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
            await self._inner.send(raw, message)
        self._side.session.abandon(CLIENT_TO_SERVER, call.upstream_id)  # (a cancellation refused there: all the same)

    # -- input rounds: the upstream's InputRequiredResult asked of the client -------------------

    def _forget_round(self, call: _Call) -> None:
        for request_id in [rid for rid, (asked, _) in self._asked.items() if asked is call]:
            del self._asked[request_id]

    async def _input_required(self, call: _Call, result: Mapping[str, Any]) -> None:
        """Each input request asked of the client as a server-to-client request of its era; the call
        is retried once all are answered (no request: retried at once with the state)."""
        requests = result.get("inputRequests") or {}
        call.rounds += 1
        if call.rounds > MAX_ROUNDS or not isinstance(requests, Mapping):  # (observe mode lets a bad one by)
            return self._refused(call.client_id, call.method, "inputRequests")
        client_methods = self._registry.protocol(self._client_version).request_methods
        for asked in requests.values():
            method = asked.get("method") if isinstance(asked, Mapping) else None
            if method not in client_methods or ASKS.get(method) not in self._capabilities:
                return self._refused(call.client_id, call.method, str(method))
        state = result.get("requestState")
        call.state, call.answers, call.waiting = state if isinstance(state, str) else None, {}, set(requests)
        for key, asked in requests.items():
            request_id = f"bridge-{next(self._asks)}"
            self._asked[request_id] = (call, key)
            params = asked.get("params", {})
            self._emit({"jsonrpc": "2.0", "id": request_id, "method": asked["method"], "params": params})
        if not requests:
            await self._retry(call)

    async def _client_answered(self, about: Message) -> None:
        """The client's reply to a request of the bridge's: one input answered; the call retried when
        its round is complete. An error from the client ends the call with that error."""
        asked = self._asked.pop(about.id, None) if isinstance(about.id, str) else None
        if asked is None:
            return  # the round was cancelled, or ended by another answer
        call, key = asked
        assert about.document is not None
        if about.kind is ERROR_RESPONSE:
            self._forget_round(call)
            self._live.pop(call.client_id, None)
            return self._emit({"jsonrpc": "2.0", "id": call.client_id, "error": about.document.get("error")})
        call.answers[key] = about.document.get("result")
        call.waiting.discard(key)
        if not call.waiting:
            await self._retry(call)

    async def _retry(self, call: _Call) -> None:
        if call.client_id not in self._live:
            return  # cancelled meanwhile
        params = {key: value for key, value in call.params.items() if key not in ("inputResponses", "requestState")}
        if call.answers:
            params["inputResponses"] = call.answers
        if call.state is not None:
            params["requestState"] = call.state
        call.params = params
        await self._send_call(call)

    # -- frames from the upstream ---------------------------------------------------------------

    async def _heard(self, raw: bytes, size: int | None) -> None:
        assert self._side is not None
        heard = self._side.heard(raw, size)
        if isinstance(heard, Rejection):
            message = heard.message
            call = None if message is None or message.id is None else self._calls.pop(message.id, None)
            if call is not None:  # the upstream's invalid reply: the client is answered in its place
                # (settled by the check when the chain named its request; here when it could not)
                self._side.session.settle(CLIENT_TO_SERVER, call.upstream_id)
                self._refuse(call.client_id, call.method, refused_reply(heard, SERVER_TO_CLIENT))
            return  # else counted by the upstream side's verdicts, as the run's mode says
        if heard.kind is NOTIFICATION:
            self._notified(raw, heard)
        elif heard.kind is RESPONSE or heard.kind is ERROR_RESPONSE:
            call = self._calls.pop(heard.id, None) if heard.id is not None else None
            if call is not None:  # else the reply to a call cancelled meanwhile
                await self._replied(call, heard.document if heard.document is not None else jsonio.loads(raw))

    def _notified(self, raw: bytes, message: Message) -> None:
        """An upstream notification goes to the client as it came, when the client's era has it."""
        assert self._side is not None
        if message.method in self._registry.protocol(self._client_version).notification_methods:
            self._out.put_nowait(raw)
            return
        self._side.untranslated(message, str(message.method), SERVER_TO_CLIENT, "dropped", raw)

    async def _replied(self, call: _Call, document: Mapping[str, Any]) -> None:
        result = document.get("result")
        if not isinstance(result, Mapping):
            self._live.pop(call.client_id, None)
            return self._emit({"jsonrpc": "2.0", "id": call.client_id, "error": document.get("error")})
        if result.get("resultType") == "input_required":
            return await self._input_required(call, result)
        self._live.pop(call.client_id, None)
        if call.method == "initialize":
            return self._answer(call.client_id, self._initialized(result))
        self._answer(call.client_id, _older(result, self._drop))

    def _initialized(self, discovered: Mapping[str, Any]) -> dict[str, Any]:
        """The client's ``initialize`` answered from the upstream's ``server/discover``: its version
        (the client's, known here), the capabilities its era knows, the upstream's name and guidance."""
        known = _known(self._registry, self._client_version, "ServerCapabilities")
        offered = discovered.get("capabilities")
        capabilities = {key: value for key, value in offered.items() if key in known} if type(offered) is dict else {}
        for name in ("resources", "tools", "prompts"):  # no list-change or update notification is listened for
            if isinstance(capabilities.get(name), Mapping):
                capabilities[name] = {}
        meta = discovered.get("_meta")
        info = meta.get(SERVER_INFO_META) if type(meta) is dict else None
        info = info or {"name": self.name, "version": "unknown"}  # optional at 2026-07-28, required before
        result = {"protocolVersion": self._client_version, "capabilities": capabilities, "serverInfo": info}
        if isinstance(discovered.get("instructions"), str):
            result["instructions"] = discovered["instructions"]
        return result

    async def close(self) -> int | None:
        self._decided.set()
        code = await self._inner.close()
        if self._side is not None and self._passthrough is False:
            self._out.put_nowait(None)
        return code
