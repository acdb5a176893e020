"""2026-07-28 clients to an upstream of the stateful era (issue 22): one upstream session per client
identity, ``server/discover`` answered from its ``initialize``, the upstream's own requests carried
as InputRequiredResult rounds. Clients of the upstream's era pass through untouched. No policy here.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import jsonio
from ...core.errors import CanonicalError, Rejection
from ...core.replies import error_reply
from ...core.types import (
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Message,
    RequestId,
    is_request_id,
)
from ...execution.approvals import arguments_digest
from ...execution.grants import GrantSigner, signer_from
from ...ledger.verdicts import answer_in_place
from ...registry.versions import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LOG_LEVEL_META,
    PROTOCOL_VERSION_META,
    SERVER_INFO_META,
    result_defaults,
    stateless_version,
)
from ...transport.connection import Connection, Receive, Received, receive_all
from ...transport.outbox import Outbox
from ..session import GatewayRun
from .upstream_side import ASKS, UpstreamSide, not_bridgeable

__all__ = ["MAX_IDENTITIES", "StatefulUpstreams"]

log = logging.getLogger("mcp_server.gateway")

BRIDGE_STATE = "mcp-bridge.1."  # the prefix of the bridge's own ``requestState``: never read as a grant
# The envelope keys the stateful era has no place for (it said them once, at ``initialize``).
_STATELESS_META = frozenset({PROTOCOL_VERSION_META, CLIENT_INFO_META, CLIENT_CAPABILITIES_META, LOG_LEVEL_META})
# What a client of the stateless era carries on a retry, which no stateful request has.
_RETRY_FIELDS = ("requestState", "inputResponses")
# Each identity is an upstream session (over STDIO, a process): a fleet's clients are a few builds
# times a few capability sets; past this many the least recently used one is closed.
MAX_IDENTITIES = 32


def _refusal(msg: str) -> Rejection:
    return Rejection(CanonicalError.INVALID_PARAMS, [{"path": "/params/requestState", "msg": msg}])


@dataclass(slots=True, eq=False)
class _Exchange:
    """A call answered with an InputRequiredResult: the upstream's requests held until its retry."""

    id: str
    call: int  # the call's id upstream
    asked: dict[str, RequestId]  # key in ``inputRequests`` → the upstream's request id
    requests: dict[str, dict[str, Any]]  # key in ``inputRequests`` → the request, to ask again if unanswered
    later: dict[str, tuple[RequestId, dict[str, Any]]] = field(default_factory=dict)  # for the next round
    reply: dict[str, Any] | None = None  # the upstream's reply to the call, come before the retry
    timer: asyncio.TimerHandle | None = None


@dataclass(slots=True, eq=False)
class _Call:
    """A client request relayed upstream: the id its client waits on (``None`` while held)."""

    client_id: RequestId | None
    method: str
    version: str | None
    logs: bool  # it stated a log level: the upstream's log messages ride on it
    tool: str | None  # what a retry must repeat: the tool and arguments (a state binds them)
    arguments: Any  # digested only when a round is asked (most calls have none)
    exchange: _Exchange | None = None


class _Identity:
    """One client identity's upstream session: its connection, its side, its calls and exchanges."""

    def __init__(self, key: bytes, connection: Connection, side: UpstreamSide, capabilities: Mapping[str, Any]) -> None:
        self.key, self.connection, self.side, self.capabilities = key, connection, side, capabilities
        self.digest = jsonio.fingerprint(key.decode())
        self.ids = itertools.count(1)
        # Translation state beside ``side.session`` (which expects and settles each request upstream):
        # the client call each upstream id carries, kept past its reply while an exchange holds it,
        # and the InputRequiredResult rounds in progress.
        self.calls: dict[int, _Call] = {}
        self.exchanges: dict[str, _Exchange] = {}
        loop = asyncio.get_running_loop()
        self.initialized: asyncio.Future[Mapping[str, Any]] = loop.create_future()  # the upstream's result
        self.ready: asyncio.Future[Mapping[str, Any]] = loop.create_future()  # … and ``initialized`` sent
        for future in (self.initialized, self.ready):  # a failure nobody waits for is no error of its own
            future.add_done_callback(lambda done: done.cancelled() or done.exception())
        self.pump: asyncio.Task[None] | None = None  # its frames read (held here: the loop keeps no task)

    def waiting(self) -> _Call | None:
        """The call an upstream request belongs to: the oldest whose client waits, else the oldest held."""
        held = None
        for call in self.calls.values():
            if call.client_id is not None:
                return call
            held = held or call
        return held


class StatefulUpstreams:
    """The upstream ``Connection`` of a gateway session whose clients speak the stateless era and
    whose upstream speaks only ``version``, a stateful one (see the module's docstring)."""

    def __init__(
        self,
        new_upstream: Callable[[], Connection],
        run: GatewayRun,
        version: str,
        *,
        max_identities: int = MAX_IDENTITIES,
    ) -> None:
        self._new, self._checks, self._version = new_upstream, run, version
        self._first: Connection | None = new_upstream()  # the passthrough's, or the first identity's
        # The next identity's upstream, opened ahead (over STDIO its process starts while nobody waits:
        # a new client's first request does not wait for a process to start).
        self._spare: tuple[Connection, asyncio.Future[None]] | None = None
        self.name = self._first.name
        # An aggregate's lists are judged at its servers: by this bridge's sides, and the client's, not again.
        self.listings_judged: bool = getattr(self._first, "listings_judged", False)
        self._max = max_identities
        self._signer: GrantSigner = run.grants or signer_from({})  # the approvals' key, when there is one
        self._decided = asyncio.Event()
        self._passthrough = False
        self._out = Outbox()
        self._identities: OrderedDict[bytes, _Identity] = OrderedDict()
        # A client's open call → where upstream (its id there): the id translation, no request state.
        self._by_client: dict[RequestId, tuple[_Identity, int]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        legacy = run.registry.protocol(version).definitions.get("ClientCapabilities", {})
        self._capabilities = frozenset(legacy.get("properties", {}))
        self._required: dict[tuple[str | None, str], Mapping[str, Any]] = {}
        self._last: tuple[Any, Any, bytes] | None = None  # the last request's client and its identity key

    # -- the Connection ------------------------------------------------------------------------

    async def open(self) -> None:
        assert self._first is not None
        await self._first.open()

    def frames(self) -> AsyncIterator[Received]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[Received]:
        await self._decided.wait()
        if self._passthrough:
            assert self._first is not None
            async for item in self._first.frames():
                yield item
            return
        while (raw := await self._out.get()) is not None:
            yield raw, None

    async def push(self, receive: Receive) -> None:
        """The frames as ``frames`` gives them, each handed to ``receive`` (the upstream's own way when
        its era's client passes through)."""
        await self._decided.wait()
        if self._passthrough:
            assert self._first is not None
            await receive_all(self._first, receive)
            return
        while (raw := await self._out.get()) is not None:
            await receive(raw, None)

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        """A client frame: the upstream's era's client passes through (decided by its first frame);
        a stateless one is translated."""
        if not self._decided.is_set():
            params = None if about is None else about.params
            self._passthrough = stateless_version(params, self._checks.registry) is None
            self._decided.set()
            if self._passthrough and self._first is not None:
                self.send = self._first.send  # type: ignore[method-assign]  # (no layer per frame from now on)
        if self._passthrough:
            assert self._first is not None
            await self._first.send(raw, about)
        elif about is not None and about.kind is REQUEST:
            await self._out.room()  # a client that does not read what it is sent is read no further
            await self._request(about.document or jsonio.loads(raw), about)  # read, never changed
        elif about is not None and about.kind is NOTIFICATION:
            await self._notification(about.document or jsonio.loads(raw))
        else:  # the stateless era has no server-to-client requests: nothing of the client's to answer
            log.warning("gateway bridge: a client reply to no request of the upstream's was not relayed")

    async def close(self) -> int | None:
        self._decided.set()
        codes = []
        if self._first is not None:
            codes.append(await self._first.close())
        if self._spare is not None:
            spare, self._spare = self._spare[0], None
            await spare.close()
        for identity in list(self._identities.values()):
            codes.append(await self._retire(identity))
        for task in list(self._tasks):
            task.cancel()
        self._out.put_nowait(None)
        return codes[0] if codes else None

    # -- client → upstream ----------------------------------------------------------------------

    async def _request(self, document: Mapping[str, Any], about: Message) -> None:
        assert about.id is not None and about.method is not None
        params: dict[str, Any] = document.get("params") or {}
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        try:
            if about.method == "subscriptions/listen":
                raise not_bridgeable("subscriptions/listen")
            identity = await self._identity(meta)
            if about.method == "server/discover":
                self._put({"jsonrpc": "2.0", "id": about.id, "result": self._discovered(identity.ready.result())})
            elif str(params.get("requestState")).startswith(BRIDGE_STATE):
                await self._retry(identity, params, about)
            else:
                await self._relay(identity, params, meta, about)
        except Rejection as refusal:
            self._put_reply(answer_in_place(self._checks.registry, refusal, about.id, about.method, about.version))

    async def _relay(
        self, identity: _Identity, params: dict[str, Any], meta: Mapping[str, Any], about: Message
    ) -> None:
        """A request goes to its identity's upstream under an id of that upstream's own."""
        assert about.id is not None and about.method is not None
        kept = {key: value for key, value in meta.items() if key not in _STATELESS_META}
        # A state or answers that are not the bridge's are ignored (unrecognised: SEP-2322).
        relayed = {key: value for key, value in params.items() if key != "_meta" and key not in _RETRY_FIELDS}
        if kept:
            relayed["_meta"] = kept
        upstream_id = next(identity.ids)
        document = {"jsonrpc": "2.0", "id": upstream_id, "method": about.method}
        if relayed or "params" in (about.document or {}):
            document["params"] = relayed
        raw, sent = identity.side.sending(document)
        identity.calls[upstream_id] = _Call(
            about.id,
            about.method,
            about.version,
            LOG_LEVEL_META in meta,
            about.tool,
            params.get("arguments", {}),
        )
        self._by_client[about.id] = (identity, upstream_id)
        await identity.connection.send(raw, sent)

    async def _notification(self, document: Mapping[str, Any]) -> None:
        """A client's ``notifications/cancelled`` names its call by the id upstream; nothing else of
        the stateless era's client notifications has a stateful counterpart to go to."""
        params = document.get("params")
        params = params if isinstance(params, dict) else {}
        request_id = params.get("requestId")
        if document.get("method") != "notifications/cancelled" or not is_request_id(request_id):
            log.warning("gateway bridge: a client notification with no stateful counterpart was not relayed")
            return
        found = self._by_client.pop(request_id, None)
        if found is not None:
            identity, upstream_id = found
            identity.calls.pop(upstream_id, None)
            await self._cancel_upstream(identity, upstream_id, params.get("reason"))

    async def _cancel_upstream(self, identity: _Identity, upstream_id: RequestId, reason: Any) -> None:
        cancel: dict[str, Any] = {"requestId": upstream_id}
        if isinstance(reason, str):
            cancel["reason"] = reason
        with contextlib.suppress(Rejection, ConnectionError, OSError):
            raw, sent = identity.side.sending({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            await identity.connection.send(raw, sent)

    # -- identities -----------------------------------------------------------------------------

    async def _identity(self, meta: Mapping[str, Any]) -> _Identity:
        """The upstream session of the request's client: made and initialized on first sight. A
        request naming no client and no capability (the gateway's own ``tools/list``) needs nothing
        of a session: it rides on the most recently used one."""
        info, declared = meta.get(CLIENT_INFO_META), meta.get(CLIENT_CAPABILITIES_META)
        if not info and not declared and self._identities:
            identity = next(reversed(self._identities.values()))
        else:
            last = self._last
            if last is not None and last[0] == info and last[1] == declared:
                key = last[2]  # the same client again: no canonical form to make
            else:
                key = jsonio.canonical([info, declared])
                self._last = (info, declared, key)
            identity = self._identities.get(key) or self._start(key, info, declared)
            self._identities.move_to_end(key)
        if identity.ready.done() and not identity.ready.cancelled() and identity.ready.exception() is None:
            return identity  # the common case: no wait, no task
        try:
            # Starting the session is the wait for what checks the request (the upstream's own start).
            await asyncio.wait_for(asyncio.shield(identity.ready), self._checks.config.check_wait_seconds)
        except Exception:  # TimeoutError included
            if self._identities.get(identity.key) is identity:  # the next request tries a fresh one
                del self._identities[identity.key]
                self._spawn(self._retire_quietly(identity))
            raise Rejection(CanonicalError.UPSTREAM_UNAVAILABLE) from None
        return identity

    def _start(self, key: bytes, info: Any, declared: Any) -> _Identity:
        """A new identity's session, started; past the bound the least recently used idle one (else
        the least recently used) is closed first, what its clients wait for answered."""
        if len(self._identities) >= self._max:
            identities = list(self._identities.values())
            idle = [one for one in identities if one.ready.done() and not one.calls and not one.exchanges]
            oldest = (idle or identities)[0]
            del self._identities[oldest.key]
            self._spawn(self._retire_quietly(oldest))
        connection, opening = self._connection()
        label = f"{connection.name} bridged at {self._version}"
        capabilities = {k: v for k, v in (declared or {}).items() if k in self._capabilities}
        side = UpstreamSide(self._checks, label, listings_judged=self.listings_judged)
        identity = self._identities[key] = _Identity(key, connection, side, capabilities)
        self._spawn(self._initialize(identity, info, opening))
        return identity

    def _connection(self) -> tuple[Connection, asyncio.Future[None] | None]:
        """A new identity's upstream (the first one's opened by ``open``, later ones' ahead of need)
        and its opening; the one after it starts opening now."""
        opening: asyncio.Future[None] | None = None
        if self._first is not None:
            connection, self._first = self._first, None
        elif self._spare is not None:
            (connection, opening), self._spare = self._spare, None
        else:
            connection = self._new()
            opening = asyncio.ensure_future(connection.open())
        spare = self._new()
        started = asyncio.ensure_future(spare.open())
        started.add_done_callback(lambda done: done.cancelled() or done.exception())  # told when awaited
        self._spare = (spare, started)
        return connection, opening

    async def _initialize(self, identity: _Identity, info: Any, opening: asyncio.Future[None] | None) -> None:
        """``initialize`` at the upstream's version with the client's capabilities and name; its
        result awaited; ``notifications/initialized``. Any failure fails ``ready``."""
        try:
            if opening is not None:
                await opening
            identity.pump = asyncio.ensure_future(self._pump(identity))
            client_info = info if isinstance(info, dict) else {"name": "unnamed", "version": "0"}
            params = {"protocolVersion": self._version, "capabilities": identity.capabilities}
            params["clientInfo"] = client_info
            raw, sent = identity.side.sending({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
            await identity.connection.send(raw, sent)
            result = await identity.initialized
            raw, sent = identity.side.sending({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await identity.connection.send(raw, sent)
            identity.ready.set_result(result)
        except Exception as failure:  # a process that did not start, an upstream that said no or ended
            log.warning("gateway bridge: the upstream session of a client did not start: %s", failure)
            if not identity.ready.done():
                identity.ready.set_exception(failure)

    def _discovered(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """``server/discover``'s answer from the upstream's ``initialize``: the client's versions (the
        bridge speaks them), the upstream's capabilities, name and instructions. Never cached
        (``ttlMs`` 0): the upstream session behind it may be replaced."""
        discovered: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(self._checks.registry.stateless_versions),
            "capabilities": result.get("capabilities", {}),
            "cacheScope": "private",
            "ttlMs": 0,
        }
        if isinstance(result.get("serverInfo"), dict):
            discovered["_meta"] = {SERVER_INFO_META: result["serverInfo"]}
        if isinstance(result.get("instructions"), str):
            discovered["instructions"] = result["instructions"]
        return discovered

    async def _retire(self, identity: _Identity) -> int | None:
        """An identity's upstream closed; what its clients wait for is answered by its pump's end."""
        if self._identities.get(identity.key) is identity:
            del self._identities[identity.key]
        for exchange in identity.exchanges.values():
            if exchange.timer is not None:
                exchange.timer.cancel()
        return await identity.connection.close()

    async def _retire_quietly(self, identity: _Identity) -> None:
        with contextlib.suppress(Exception):
            await self._retire(identity)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the upstream's asks: InputRequiredResult rounds -----------------------------------------

    async def _retry(self, identity: _Identity, params: dict[str, Any], about: Message) -> None:
        """A client's retry with its answers: they go to the upstream's held requests, and the call's
        reply (come already, or to come) answers the retry; what it left unanswered is asked again.
        A state tampered, of another call or spent: refused, and nothing goes upstream."""
        assert about.id is not None
        claims = self._signer.unseal(params.get("requestState"), BRIDGE_STATE)
        if claims is None:
            raise _refusal("request_state_not_the_bridges")
        if claims.get("identity") != identity.digest or claims.get("method") != about.method:
            raise _refusal("request_state_of_another_call")
        if claims.get("tool") != about.tool or claims.get("arguments_sha256") != arguments_digest(
            params.get("arguments", {})
        ):
            raise _refusal("request_state_of_another_call")
        expires = claims.get("expires")
        if not isinstance(expires, int | float) or expires <= self._signer.clock():
            raise _refusal("request_state_expired")
        store = self._checks.single_use
        if store is not None and not await store.claim("bridge:" + str(claims.get("exchange")), float(expires)):
            raise _refusal("request_state_used")  # retried through another replica already
        exchange = identity.exchanges.pop(str(claims.get("exchange")), None)
        call = None if exchange is None else identity.calls.get(exchange.call)
        if exchange is None or call is None:
            raise _refusal("request_state_expired")
        if exchange.timer is not None:
            exchange.timer.cancel()
        call.client_id, call.exchange = about.id, None
        self._by_client[about.id] = (identity, exchange.call)
        answers = params.get("inputResponses")
        answers = answers if isinstance(answers, dict) else {}
        missing: dict[RequestId, dict[str, Any]] = {}  # asked again (SEP-2322: re-request what is missing)
        for key, request_id in exchange.asked.items():
            if isinstance(answers.get(key), dict):
                await self._answer_upstream(identity, request_id, answers[key], "inputResponses/" + key)
            else:
                missing[request_id] = exchange.requests[key]
        if exchange.reply is not None:
            self._settled(identity, exchange.call, exchange.reply)
        elif missing or exchange.later:
            self._ask(identity, exchange.call, call, {**missing, **dict(exchange.later.values())})

    async def _answer_upstream(self, identity: _Identity, request_id: RequestId, result: Any, feature: str) -> None:
        """The client's answer to a request of the upstream's, checked at the upstream's version; no
        answer (or one refused there): an error naming what was missing."""
        document: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
        if not isinstance(result, dict):
            document = dict(error_reply(not_bridgeable(feature), request_id).document or {})
        try:
            raw = identity.side.answering(document)
        except Rejection as refusal:
            raw = identity.side.answering(dict(error_reply(refusal, request_id).document or {}))
        with contextlib.suppress(ConnectionError, OSError):
            await identity.connection.send(raw, None)

    def _ask(self, identity: _Identity, upstream_id: int, call: _Call, asks: dict[RequestId, dict[str, Any]]) -> None:
        """The call's client is answered with an InputRequiredResult carrying the upstream's requests
        ``asks``, and a state, signed, that binds this exchange; held until the retry or its expiry."""
        assert call.client_id is not None
        client_id = call.client_id
        requests = {f"upstream-{rid}": ask for rid, ask in asks.items()}
        exchange = _Exchange(secrets.token_hex(8), upstream_id, {f"upstream-{rid}": rid for rid in asks}, requests)
        identity.exchanges[exchange.id] = exchange
        call.client_id, call.exchange = None, exchange
        self._by_client.pop(client_id, None)
        ttl = self._checks.config.request_timeout_seconds
        claims = {
            "expires": self._signer.clock() + ttl,
            "exchange": exchange.id,
            "identity": identity.digest,
            "method": call.method,
            "tool": call.tool,
            "arguments_sha256": arguments_digest(call.arguments),
        }
        exchange.timer = asyncio.get_running_loop().call_later(ttl, self._expire, identity, exchange)
        state = self._signer.seal(BRIDGE_STATE, claims)
        result = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
        self._put({"jsonrpc": "2.0", "id": client_id, "result": result})

    def _expire(self, identity: _Identity, exchange: _Exchange) -> None:
        """No retry in time: the upstream's held requests get an error and its call is cancelled."""
        if identity.exchanges.pop(exchange.id, None) is None:
            return
        identity.calls.pop(exchange.call, None)

        async def end() -> None:
            held = list(exchange.asked.values()) + [rid for rid, _ in exchange.later.values()]
            for request_id in held:
                timeout = error_reply(Rejection(CanonicalError.UPSTREAM_TIMEOUT), request_id).document or {}
                with contextlib.suppress(Rejection, ConnectionError, OSError):
                    await identity.connection.send(identity.side.answering(dict(timeout)), None)
            await self._cancel_upstream(identity, exchange.call, "the client did not retry in time")

        self._spawn(end())

    # -- upstream → client ----------------------------------------------------------------------

    async def _pump(self, identity: _Identity) -> None:
        try:
            async for raw, size, *_ in identity.connection.frames():  # (the bridge reads replies by its own ids)
                await self._heard(identity, raw, size)
                await self._out.room()  # the client reads slower: the upstream is read no faster
        except Exception:  # a bridge fault must not end the other identities' traffic
            log.exception("gateway bridge: an upstream's frames could not be handled")
        finally:
            self._gone(identity)

    def _gone(self, identity: _Identity) -> None:
        """The upstream ended: whatever of its clients waits is answered (upstream unavailable)."""
        if self._identities.get(identity.key) is identity:
            del self._identities[identity.key]
        for future in (identity.initialized, identity.ready):
            if not future.done():
                future.set_exception(ConnectionError("the upstream ended"))
        gone = Rejection(CanonicalError.UPSTREAM_UNAVAILABLE)
        for call in identity.calls.values():
            if call.client_id is not None:
                self._by_client.pop(call.client_id, None)
                self._put_reply(answer_in_place(self._checks.registry, gone, call.client_id, call.method, call.version))
        identity.calls.clear()

    async def _heard(self, identity: _Identity, raw: bytes, size: int | None) -> None:
        heard = identity.side.heard(raw, size)
        if isinstance(heard, Rejection):
            await self._refused(identity, heard)
        elif heard.kind is RESPONSE or heard.kind is ERROR_RESPONSE:
            self._replied(identity, heard)
        elif heard.kind is REQUEST:
            await self._asked(identity, heard)
        else:
            self._notified(identity, heard, raw)

    def _replied(self, identity: _Identity, message: Message) -> None:
        """The upstream's reply: under its client's id, a result marked complete (the stateless era
        requires ``resultType``); held with its exchange while the client's retry has not come."""
        document = dict(message.document or {})
        if message.id == 0 and not identity.initialized.done():
            result = document.get("result")
            if isinstance(result, dict):
                identity.initialized.set_result(result)
            else:
                identity.initialized.set_exception(ConnectionError(f"initialize refused: {document.get('error')}"))
            return
        call = identity.calls.get(message.id) if isinstance(message.id, int) else None
        if call is None:
            return  # a call cancelled or expired meanwhile
        result = document.get("result")
        if type(result) is dict:
            document["result"] = {**self._added(call), **result}
        self._settled(identity, message.id, document)  # type: ignore[arg-type]

    def _added(self, call: _Call) -> Mapping[str, Any]:
        """The fields the client's version requires of ``call``'s result that the upstream's lacks."""
        key = (call.version, call.method)
        added = self._required.get(key)
        if added is None:
            protocol = self._checks.registry.protocol(call.version or self._checks.registry.stateless_versions[-1])
            # An upstream's result is complete (no rounds of its own), and private to its client.
            added = self._required[key] = result_defaults(protocol, call.method, scope="private")
        return added

    def _settled(self, identity: _Identity, upstream_id: int, document: dict[str, Any]) -> None:
        call = identity.calls.get(upstream_id)
        if call is None:
            return  # a call cancelled or expired meanwhile
        if call.client_id is None:
            assert call.exchange is not None
            call.exchange.reply = document
            return
        del identity.calls[upstream_id]
        self._by_client.pop(call.client_id, None)
        document["id"] = call.client_id
        self._put(document)

    async def _asked(self, identity: _Identity, message: Message) -> None:
        """A request of the upstream's: ``ping`` answered here; an elicitation, sampling or roots
        request becomes a round of the call it belongs to, when its client declared the capability;
        anything else, or with no call to ride on, is answered with NOT_BRIDGEABLE and recorded."""
        assert message.id is not None and message.method is not None
        if message.method == "ping":
            await self._answer_upstream(identity, message.id, {}, "ping")
            return
        needs, call = ASKS.get(message.method), identity.waiting()
        if needs is None or call is None:
            identity.side.untranslated(message, message.method, SERVER_TO_CLIENT, "answered")
            await self._answer_upstream(identity, message.id, None, message.method)
        elif needs not in identity.capabilities:
            missing = Rejection(CanonicalError.MISSING_CLIENT_CAPABILITY, extra={"capability": needs})
            identity.side.verdicts.violation(
                "missing_client_capability", identity.side.frame(SERVER_TO_CLIENT), message, action="answered"
            )
            with contextlib.suppress(ConnectionError, OSError):
                raw = identity.side.answering(dict(error_reply(missing, message.id).document or {}))
                await identity.connection.send(raw, None)
        else:
            ask = {"method": message.method, "params": dict(message.params or {})}
            upstream_id = next(rid for rid, held in identity.calls.items() if held is call)
            if call.exchange is None:
                self._ask(identity, upstream_id, call, {message.id: ask})
            else:  # the client has not retried yet: it is asked in the next round
                call.exchange.later[f"upstream-{message.id}"] = (message.id, ask)

    def _notified(self, identity: _Identity, message: Message, raw: bytes) -> None:
        """Progress goes to its token's client; a log message rides on a call that asked for logs;
        anything else (list changes, resource updates, logs outside a call) has no stateless
        request to ride on and is recorded, never dropped in silence."""
        method = message.method
        rides = method == "notifications/message" and any(call.logs for call in identity.calls.values())
        if method == "notifications/progress" or rides:
            self._out.put_nowait(raw)
        elif method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            for exchange in identity.exchanges.values():
                exchange.asked = {key: rid for key, rid in exchange.asked.items() if rid != cancelled}
                exchange.later.pop(f"upstream-{cancelled}", None)
        else:
            identity.side.untranslated(message, str(method), SERVER_TO_CLIENT, "recorded")

    async def _refused(self, identity: _Identity, rejection: Rejection) -> None:
        """What the upstream side refused at its version (enforced): a reply is answered in its place
        to the client waiting for it; an invalid request of the upstream's gets its error."""
        message = rejection.message
        if message is None or message.id is None:
            return
        if message.kind is REQUEST:
            with contextlib.suppress(ConnectionError, OSError):
                await identity.connection.send(error_reply(rejection, message.id).to_bytes(), None)
            return
        call = identity.calls.get(message.id) if isinstance(message.id, int) else None
        if call is None:
            return
        _, answer = identity.side.verdicts.in_place(identity.side.frame(SERVER_TO_CLIENT), rejection)
        self._settled(identity, message.id, dict(answer.document or {}))  # type: ignore[arg-type]

    # -- to the client --------------------------------------------------------------------------

    def _put(self, document: Mapping[str, Any]) -> None:
        self._out.put_nowait(jsonio.dumps(document))

    def _put_reply(self, reply: Any) -> None:
        self._out.put_nowait(reply.to_bytes())
