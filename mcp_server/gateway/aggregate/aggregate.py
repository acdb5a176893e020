"""The gateway session's upstream when it fronts many servers: one ``Connection`` that speaks to the
client as one server (at the client's version: the gateway session checks that side, as ever) and
holds a session of its own with each server (at the server's version, checked as itself: ``Member``;
a call at the client's version is routed, its reply checked by the client's session: ADR 37).

Client requests are routed by exposed name or URI to the server that owns them, under an id (and
progress token) of that server's own; the server's replies come back under the client's. What a
server asks or tells the client carries its origin (``_meta`` key ``ORIGIN_META``, and ids of its
own). Lists are answered from the merged lists; ``initialize``, ``ping`` and ``logging/setLevel``
by the aggregate for all. No I/O of its own but the servers' connections, through ``keeper``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

from ... import __version__
from ...chain.error_boundary import render_rejection
from ...chain.tool_lock import lock_refusal, locked_out
from ...core import jsonio
from ...core.errors import CanonicalError, Rejection
from ...core.replies import error_reply
from ...core.session import Session
from ...core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Message,
    Reply,
    RequestId,
    is_request_id,
)
from ...ledger.verdicts import Action, answer_in_place
from ...transport.connection import Receive
from ...transport.outbox import Outbox
from ..ending import end_pending
from ..session import GatewayRun, Routed
from .capabilities import union
from .keeper import fetch_lists, keep
from .lists import KINDS, LIST_CHANGED, Hidden, Merged, Source, page
from .member import Call, Hello, Member, State
from .names import expose
from .servers import AggregateOptions

__all__ = ["ORIGIN_META", "SERVER_NAME", "Aggregate"]

log = logging.getLogger("mcp_server.gateway")

ORIGIN_META = "mcp-server.gateway/server"  # the server a request or notification to the client came from
SERVER_NAME = "mcp-server-aggregate"
_CHANGED_LIST = {method: capability for capability, method in LIST_CHANGED.items()}
_NO_COMPLETION: Mapping[str, Any] = {"completion": {"values": []}}
_BEFORE_INITIALIZED = frozenset({"initialize", "ping"})  # the requests a client may send before ``initialized``


def _unavailable(member: Member) -> Rejection:
    return Rejection(
        CanonicalError.UPSTREAM_UNAVAILABLE,
        [{"path": "", "msg": "server_unavailable", "server": member.name}],
        extra={"server": member.name},
    )


def _unknown(error: CanonicalError, path: str, msg: str) -> Rejection:
    return Rejection(error, [{"path": path, "msg": msg}])


class Aggregate:
    """Many servers as one upstream (see the module's docstring)."""

    listings_judged = True  # its tools/list answers are its servers' tools, each judged at its server

    def __init__(
        self, members: Sequence[Member], options: AggregateOptions, run: GatewayRun, name: str, *, reports: bool = True
    ) -> None:
        """``reports``: what the merged lists leave out is reported (start-up's look says it otherwise)."""
        self.name = name
        self._reports = reports
        self._members = list(members)
        self._options, self._checks, self.registry = options, run, run.registry
        self._frame_limit = run.max_server_frame_bytes
        self._out = Outbox()
        self._hello: Hello | None = None  # the client's initialize, once it came
        self._greeting = asyncio.Event()
        self._settled = [asyncio.Event() for _ in self._members]
        self._merged = Merged([], options.separator, options.max_name_length)
        self._routes: dict[str, dict[str, tuple[Member, str]]] = {"tools": {}, "prompts": {}}  # exposed → owner, own
        self._ever: dict[tuple[str, str], int] = {}  # (list, exposed name) → the server it ever came from
        self._reported: set[Hidden] = set()
        self._tokens: dict[tuple[int, str], Any] = {}  # (server, token sent) → the client's progress token
        self._asks: dict[str, tuple[Member, RequestId]] = {}  # id the client sees → (server, its own id)
        self._numbers = itertools.count(1)
        self._announced: Mapping[str, Any] = {}
        self._early: list[bytes] | None = []  # what servers send before the client's ``initialized``
        self._level: str | None = None
        self._subscriptions: dict[str, int] = {}  # URI → its server
        self._tasks: set[asyncio.Task[None]] = set()
        self._receive: Receive | None = None  # the session's, once it takes frames as they come (``push``)
        self._waiting: dict[int, Routed] = {}  # a routed reply in the queue, by its bytes (alive there)
        self._handlers: Mapping[str, Callable[[Message, Mapping[str, Any], bytes], None]] = {
            "initialize": self._greet,
            "ping": lambda about, params, raw: self._answer(about, {}),
            "logging/setLevel": self._set_level,
            "tools/call": self._call_tool,
            "prompts/get": self._get_prompt,
            "resources/read": self._by_uri,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._by_uri,
            "completion/complete": self._complete,
            **{method: self._list for method in KINDS},
        }

    # -- the Connection --------------------------------------------------------------------------

    async def open(self) -> None:
        for member in self._members:
            self._spawn(keep(member, self, self._options))

    async def frames(self) -> AsyncIterator[tuple[bytes, int | None]]:
        while (raw := await self._out.get()) is not None:
            yield raw, None

    async def push(self, receive: Receive) -> None:
        """What the servers send, handed to ``receive`` by the task that read it (a reply to a routed
        call with its route: ``Routed``); what the aggregate answers itself, from its queue (with the
        route of a routed reply that had to wait there)."""
        self._receive = receive
        while (raw := await self._out.get()) is not None:
            await receive(raw, None, None, self._waiting.pop(id(raw), None) if self._waiting else None)

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        """A client frame: answered here, or routed to the server it is for."""
        document = about.document if about is not None else None
        if about is None or type(document) is not dict:  # observe mode's frame, or the era bridge's answer
            read = _read(raw, document)
            if read is None:
                log.info("aggregate: a client frame that is no JSON object goes to no server")
                return
            about, document = read
            if about.kind is REQUEST and about.id is None:  # no id a reply could be routed back by
                self._put_reply(self._unroutable(about))
                return
        params = document.get("params")  # (read only: a server's is a new one)
        if type(params) is not dict:
            params = params if isinstance(params, Mapping) else {}
        if about.kind is not REQUEST:
            if about.kind is NOTIFICATION:
                self._notification(about, params)
            else:
                self._client_answer(about, document)
            return
        if self._early is not None and about.method not in _BEFORE_INITIALIZED:
            self._initialized()  # a client that did not say ``initialized`` is past it all the same
        handler = self._handlers.get(about.method)  # type: ignore[arg-type]  # (a request names one)
        try:
            if handler is None:
                raise _unknown(CanonicalError.METHOD_NOT_FOUND, "/method", "not_offered_by_the_aggregate")
            handler(about, params, raw)
        except Rejection as refusal:
            assert about.id is not None
            self._put_reply(answer_in_place(self.registry, refusal, about.id, about.method, about.version))

    def _unroutable(self, about: Message) -> Reply:
        """A request of no usable id (observe mode lets it on): refused as a server would, with no id
        (or a null one) as the client's version writes it."""
        refusal = _unknown(CanonicalError.INVALID_ENVELOPE, "/id", "must be a string or an integer")
        refusal.message = about
        reply = render_rejection(refusal, self.registry, None, None if self._hello is None else self._hello.version)
        assert reply is not None  # (a request is always answered)
        return reply

    async def close(self) -> int | None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*(member.stop() for member in self._members), return_exceptions=True)
        self._out.put_nowait(None)
        return 0

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- client → servers --------------------------------------------------------------------------

    def _answer(self, about: Message, result: Mapping[str, Any]) -> None:
        self._put({"jsonrpc": "2.0", "id": about.id, "result": result})

    def _relay(self, member: Member, about: Message, params: Mapping[str, Any], tool: str | None, raw: bytes) -> None:
        """A client request (``raw``, read as ``about``) to ``member``, under an id (and progress
        token) of its own; its reply is the client's. At the client's version it is routed: checked
        already, counted in the server's section here, its reply checked by the client's session
        (ADR 37), the client's bytes sent as they came when nothing in them changes (``params`` the
        client's own, its id free there); else checked at the server's version (and against the
        lockfile, for a call) by the server's side."""
        side, client_id = member.side, about.id
        if member.state is not State.UP or side is None:
            raise _unavailable(member)
        assert client_id is not None and about.method is not None and about.document is not None
        # (a number is never an id of the aggregate's own: only a call of the client's can hold it there)
        free = type(client_id) is int and client_id not in member.calls
        member_id = client_id if free else _member_id(member, client_id)
        routed = (  # (a session takes the frames: an era bridge that reads them checks them as its own)
            self._receive is not None and about.version is not None and about.version == side.session.version
        )
        call = Call(client_id, about.method, about.version, tool, None, None, routed)
        lock = side.verdicts.lock
        if lock is not None and locked_out(lock, REQUEST, about.method, tool):
            locked = lock_refusal(Message(REQUEST, member_id, about.method, params, tool=tool))
            if side.verdicts.judge(side.frame(CLIENT_TO_SERVER), locked) is Action.ENFORCED:
                raise locked
        if "_meta" in params:
            params = self._token_out(member, params, call)
        if routed and member_id == client_id and params is about.document.get("params"):
            sent = about  # the client's bytes as they came (its tool: the name the server knows it by)
        else:
            document = {"jsonrpc": "2.0", "id": member_id, "method": about.method, "params": params}
            if routed:
                sent = Message(REQUEST, member_id, about.method, params, about.version, tool, document)
                raw = jsonio.dumps(document)
            else:
                raw, sent = side.sending(document)
        if routed:
            side.carried[(CLIENT_TO_SERVER, about.method)] += 1
        member.calls[member_id] = call
        if not member.post(raw, sent):
            self._forget(member, member_id)
            raise _unavailable(member)

    def _token_out(self, member: Member, params: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        """The client's progress token, as a token of the server's own (it reports under it)."""
        meta = params.get("_meta")
        if not isinstance(meta, Mapping) or meta.get("progressToken") is None:
            return params
        sent = f"progress-{next(self._numbers)}"
        call.token, call.sent_token = meta["progressToken"], sent
        self._tokens[(member.index, sent)] = call.token
        return {**params, "_meta": {**meta, "progressToken": sent}}

    def _forget(self, member: Member, member_id: RequestId) -> Call | None:
        call = member.calls.pop(member_id, None)
        if call is not None and call.sent_token is not None:
            self._tokens.pop((member.index, call.sent_token), None)
        return call

    def _sent_to(self, client_id: RequestId) -> tuple[Member, RequestId] | None:
        """Where a client's request waits: its server, and the id it went there under (the
        client's own, unless that was taken there)."""
        for member in self._members:
            call = member.calls.get(client_id)
            if call is not None and call.client_id == client_id:
                return member, client_id
        for member in self._members:
            for member_id, call in member.calls.items():
                if call.client_id == client_id:
                    return member, member_id
        return None

    def _owner(self, key: str, name: Any) -> tuple[Member, str]:
        """The server of an exposed tool or prompt name, and its own name for it."""
        found = self._routes[key].get(name) if type(name) is str else None
        return found if found is not None else self._unowned(key, name)

    def _unowned(self, key: str, name: Any) -> tuple[Member, str]:
        """A name no server up exposes: refused (the server it was, or would be, is down or starting)."""
        was = self._ever.get((key, name)) if isinstance(name, str) else None
        if was is None and isinstance(name, str):  # a name of a server not up yet, by its prefix
            starts = ((m.index, expose(m.spec.prefix, self._options.separator, "")) for m in self._members)
            was = next((index for index, start in starts if start and name.startswith(start)), None)
        if was is not None and self._members[was].state is not State.UP:  # down, or (again) starting
            raise _unavailable(self._members[was])
        if key == "tools":
            raise _unknown(CanonicalError.TOOL_NOT_FOUND, "/params/name", "unknown_tool")
        raise _unknown(CanonicalError.INVALID_PARAMS, "/params/name", "unknown_prompt")

    def _call_tool(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        name = params.get("name")
        member, own = self._owner("tools", name)
        self._relay(member, about, params if own == name else {**params, "name": own}, own, raw)

    def _get_prompt(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        member, own = self._owner("prompts", params.get("name"))
        self._relay(member, about, params if own == params.get("name") else {**params, "name": own}, None, raw)

    def _uri_owner(self, uri: Any) -> Member:
        index = self._merged.owner_of_uri(uri) if isinstance(uri, str) else None
        if index is None:
            raise _unknown(CanonicalError.RESOURCE_NOT_FOUND, "/params/uri", "unknown_resource")
        return self._members[index]

    def _by_uri(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        member = self._uri_owner(params.get("uri"))
        if about.method == "resources/unsubscribe":
            self._subscriptions.pop(str(params.get("uri")), None)
        self._relay(member, about, params, None, raw)

    def _subscribe(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        member = self._uri_owner(params.get("uri"))
        resources = member.capabilities.get("resources")
        if not isinstance(resources, Mapping) or resources.get("subscribe") is not True:
            error = CanonicalError.METHOD_NOT_FOUND
            raise Rejection(error, [{"path": "/params/uri", "msg": "not_subscribable", "server": member.name}])
        self._relay(member, about, params, None, raw)
        self._subscriptions[str(params.get("uri"))] = member.index

    def _complete(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        ref = params.get("ref")
        ref = ref if isinstance(ref, Mapping) else {}
        if ref.get("type") == "ref/prompt":
            member, own = self._owner("prompts", ref.get("name"))
            params = {**params, "ref": {**ref, "name": own}}
        else:
            member = self._uri_owner(ref.get("uri"))
        if not isinstance(member.capabilities.get("completions"), Mapping):
            self._answer(about, _NO_COMPLETION)  # no suggestions: what a server without completions has
            return
        self._relay(member, about, params, None, raw)

    def _list(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        key = KINDS[str(about.method)][0]
        items, cursor = page(self._merged.items[key], params.get("cursor"), self._options.page_size)
        self._answer(about, {key: items, **({} if cursor is None else {"nextCursor": cursor})})

    def _set_level(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        """``logging/setLevel`` for every server that logs (and again for each that restarts)."""
        self._level = str(params.get("level"))
        self._spawn(self._each("logging/setLevel", {"level": self._level}, "logging", about))

    async def _each(self, method: str, params: Mapping[str, Any], capability: str, about: Message) -> None:
        """``method`` asked of every server up that has ``capability``; the client answered once all did."""
        asked = [
            member.ask(method, params, self._options.answer_seconds)
            for member in self._members
            if member.state is State.UP and isinstance(member.capabilities.get(capability), Mapping)
        ]
        for outcome in await asyncio.gather(*asked, return_exceptions=True):
            if isinstance(outcome, BaseException):
                log.warning("aggregate: %s: %s", method, outcome)
        self._answer(about, {})

    def _greet(self, about: Message, params: Mapping[str, Any], raw: bytes) -> None:
        self._spawn(self._greeted(about, params))

    async def _greeted(self, about: Message, params: Mapping[str, Any]) -> None:
        """The client's ``initialize``: each server is initialized with it; answered once every
        server is up or has failed once, or after ``start_seconds`` (the slower ones join later,
        announced by ``list_changed``)."""
        requested = params.get("protocolVersion")
        version = requested if requested in self.registry.handshake_versions else self.registry.latest_handshake
        capabilities, info = params.get("capabilities"), params.get("clientInfo")
        self.welcome(
            Hello(
                version,
                capabilities if isinstance(capabilities, Mapping) else {},
                info if isinstance(info, Mapping) else {"name": "unnamed", "version": "0"},
            )
        )
        await self.settled(self._options.start_seconds)
        self._announced = union((member.capabilities for member in self._members), self.registry, version)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self._announced,
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
        }
        told = [
            f"{member.name}: {member.result['instructions']}"
            for member in self._members
            if member.state is State.UP and isinstance(member.result.get("instructions"), str)
        ]
        if told:
            result["instructions"] = "\n\n".join(told)
        self._answer(about, result)

    def welcome(self, hello: Hello) -> None:
        """The client's ``initialize`` (the first one): the servers are initialized with it."""
        if self._hello is None:
            self._hello = hello
            self._greeting.set()

    async def greeted(self) -> Hello:
        await self._greeting.wait()
        assert self._hello is not None
        return self._hello

    async def settled(self, seconds: float) -> None:
        """Until every server is up or has failed once, ``seconds`` at most."""
        waits = [asyncio.ensure_future(settled.wait()) for settled in self._settled]
        await asyncio.wait(waits, timeout=seconds)
        for waiting in waits:
            waiting.cancel()

    def _notification(self, about: Message, params: Mapping[str, Any]) -> None:
        method = about.method
        if method == "notifications/initialized":
            self._initialized()
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            found = self._sent_to(request_id) if is_request_id(request_id) else None
            if found is not None:
                member, member_id = found
                call = self._forget(member, member_id)
                if call is not None and call.routed and member.side is not None:
                    _booked(member, member_id, call).abandon(CLIENT_TO_SERVER, member_id)  # its reply: late
                self._tell(member, method, {**params, "requestId": member_id})
        elif method == "notifications/roots/list_changed":
            for member in self._members:
                self._tell(member, method, params or None)
        else:
            log.info("aggregate: a client notification %s goes to no server", method)

    def _initialized(self) -> None:
        """The client's ``initialized``: what the servers sent meanwhile goes to it now."""
        early, self._early = self._early or [], None
        for raw in early:
            self._out.put_nowait(raw)

    def _tell(self, member: Member, method: str, params: Mapping[str, Any] | None) -> None:
        if member.state is State.UP:
            with contextlib.suppress(Rejection):  # refused at its version (enforced): reported, not sent
                member.notify(method, params)

    def _client_answer(self, about: Message, document: Mapping[str, Any]) -> None:
        """The client's answer to a server's request: to that server, under its own id."""
        found = self._asks.pop(about.id, None) if isinstance(about.id, str) else None
        if found is None:
            log.warning("aggregate: a client reply to no server's request (id %r)", about.id)
            return
        member, member_id = found
        if member.state is not State.UP or member.side is None:
            return  # the server went down meanwhile
        try:
            raw = member.side.answering({**document, "id": member_id})
        except Rejection as refusal:  # the client's answer refused at the server's version
            raw = member.side.answering(dict(error_reply(refusal, member_id).document or {}))
        member.post(raw, None)

    # -- servers → client (the keeper's ``Owner``) --------------------------------------------------

    async def heard(self, member: Member, raw: bytes, size: int | None) -> None:
        side = member.side
        assert side is not None
        document = self._parsed(raw, size)
        if document is not None and "method" not in document:
            request_id = document.get("id")
            call = member.calls.get(request_id)  # type: ignore[arg-type]  # (``_parsed``: a string or a number)
            if call is not None and call.routed:  # checked by the client's session alone (ADR 37)
                self._forget(member, request_id)  # type: ignore[arg-type]
                if request_id != call.client_id:
                    document = {**document, "id": call.client_id}
                    raw = jsonio.dumps(document)
                await self._to_client(raw, Routed(document, side.session, side.carried))
                return
        heard = side.hear(raw, size, document)
        message, out = heard.verdict, None
        if isinstance(message, Rejection):
            out = self._refused(member, message)
        elif message.kind is RESPONSE or message.kind is ERROR_RESPONSE:
            if member.own is None or not member.own.deliver(message.id, message.document or {}):
                out = self._replied(member, message, heard.raw)
        elif message.kind is REQUEST:
            out = self._asked(member, message)
        else:
            out = self._notified(member, message)
        if out is not None:
            await self._to_client(out, None)

    def _parsed(self, raw: bytes, size: int | None) -> dict[str, Any] | None:
        """A server's frame as an object, when it is one and within the limit (``None``: its side's
        check says what it is, from the bytes)."""
        if size is not None or len(raw) > self._frame_limit:
            return None
        try:
            document = jsonio.loads(raw)
        except jsonio.JSONSyntaxError:
            return None
        if type(document) is not dict:
            return None
        request_id = document.get("id")
        return document if request_id is None or type(request_id) in (str, int) else None

    def _to_client(self, raw: bytes, routed: Routed | None) -> Awaitable[None]:
        """A server's frame (or what answers in its place) to the client, behind whatever waits in the
        queue; the server is read no faster than the client reads. (The session's own handling to
        await, when nothing waits: no layer of the aggregate's between.)"""
        receive = self._receive
        if receive is not None and not self._out.held:  # (no bytes held: no frame waits there)
            return receive(raw, None, None, routed)
        if routed is not None:
            self._waiting[id(raw)] = routed
        self._out.put_nowait(raw)
        return self._out.room()

    def _replied(self, member: Member, message: Message, raw: bytes) -> bytes | None:
        """The client's answer, under its id: the bytes as its server's side let them on (``raw``)
        when that id is the client's own."""
        call = self._forget(member, message.id) if message.id is not None else None
        if call is None:  # cancelled, or answered already in its place
            return None
        if message.id == call.client_id:
            return raw
        return jsonio.dumps({**(message.document or {}), "id": call.client_id})

    def _asked(self, member: Member, message: Message) -> bytes | None:
        """A server's request to the client (sampling, elicitation, roots): under an id naming the
        server, with its origin; ``ping`` is the aggregate's to answer."""
        assert message.id is not None and member.side is not None
        if message.method == "ping":
            member.post(member.side.answering({"jsonrpc": "2.0", "id": message.id, "result": {}}), None)
            return None
        client_id = f"{member.name}-{next(self._numbers)}"
        self._asks[client_id] = (member, message.id)
        params = self._origin(member, message.params)
        return self._event({**(message.document or {}), "id": client_id, "params": params})

    def _notified(self, member: Member, message: Message) -> bytes | None:
        method, params = message.method, dict(message.params or {})
        if method == "notifications/progress":
            sent = params.get("progressToken")
            token = self._tokens.get((member.index, sent)) if isinstance(sent, str) else None
            if token is None:
                log.warning("aggregate: server %r reported progress for no call of its own", member.name)
                return None
            params["progressToken"] = token
        elif method in _CHANGED_LIST:
            self._spawn(self._refresh(member, _CHANGED_LIST[method]))
            return None
        elif method == "notifications/cancelled":
            asked = next(
                (key for key, (m, rid) in self._asks.items() if m is member and rid == params.get("requestId")), None
            )
            if asked is None:
                return None
            del self._asks[asked]
            params["requestId"] = asked
        return self._event({"jsonrpc": "2.0", "method": method, "params": self._origin(member, params)})

    def _origin(self, member: Member, params: Mapping[str, Any] | None) -> dict[str, Any]:
        params = dict(params or {})
        meta = params.get("_meta")
        params["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), ORIGIN_META: member.name}
        return params

    def _refused(self, member: Member, rejection: Rejection) -> bytes | None:
        """A server's frame refused at its version (enforced): a request of its own is answered with
        the error; a reply to a client's request, the client is answered in its place."""
        message, side = rejection.message, member.side
        if message is None or message.id is None or side is None:
            return None
        if message.kind is REQUEST:
            member.post(error_reply(rejection, message.id).to_bytes(), None)
            return None
        call = self._forget(member, message.id)
        if call is None:
            return None
        _, answer = side.verdicts.in_place(side.frame(SERVER_TO_CLIENT), rejection)
        return jsonio.dumps({**(answer.document or {}), "id": call.client_id})

    async def _refresh(self, member: Member, capability: str) -> None:
        """A server's list changed: fetched again, then the client told (once its own list changed)."""
        side = member.side
        try:
            fetched = await fetch_lists(member, self._options.answer_seconds, only=capability)
        except Exception as failure:  # Failed (no answer), ConnectionError: its keeper sees it too
            log.warning("aggregate: server %r: its %s could not be listed again: %s", member.name, capability, failure)
            return
        if fetched is not None and member.state is State.UP and member.side is side:
            member.lists = {**member.lists, **fetched}
            self._rebuild({capability})

    def up(self, member: Member) -> None:
        self._settled[member.index].set()
        self._rebuild({capability for capability in LIST_CHANGED if _has(member, capability)})

    def down(self, member: Member, reason: str) -> None:
        """A server failed: the client's requests it was answering get ``UPSTREAM_UNAVAILABLE``, its
        requests to the client are cancelled, its tools leave the lists (``list_changed``)."""
        self._settled[member.index].set()
        if member.side is not None:
            for member_id, waiting in member.calls.items():
                if waiting.routed:
                    _booked(member, member_id, waiting)
            end_pending(member.side.session, member.side.verdicts, "upstream_gone")  # the report's account
        for member_id in list(member.calls):
            call = self._forget(member, member_id)
            assert call is not None
            refusal = _unavailable(member)
            self._put_reply(answer_in_place(self.registry, refusal, call.client_id, call.method, call.version))
        for client_id in [key for key, (owner, _) in self._asks.items() if owner is member]:
            del self._asks[client_id]
            cancel = {"requestId": client_id, "reason": f"server {member.name} is down: {reason}"}
            self._put_event({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        had = {capability for capability in LIST_CHANGED if _has(member, capability)}
        member.lists = {}
        self._rebuild(had)

    def resume(self, member: Member) -> list[tuple[str, Mapping[str, Any]]]:
        asks: list[tuple[str, Mapping[str, Any]]] = []
        if self._level is not None and isinstance(member.capabilities.get("logging"), Mapping):
            asks.append(("logging/setLevel", {"level": self._level}))
        asks += [
            ("resources/subscribe", {"uri": uri}) for uri, index in self._subscriptions.items() if index == member.index
        ]
        return asks

    def _rebuild(self, changed: set[str]) -> None:
        """The merged lists made again from the servers up; what cannot be exposed is reported once;
        the client told of each list that changed (after its ``initialized``)."""
        sources = [Source(m.index, m.name, m.spec.prefix, m.lists) for m in self._members if m.state is State.UP]
        self._merged = Merged(sources, self._options.separator, self._options.max_name_length)
        members = self._members
        self._routes = {
            key: {exposed: (members[index], own) for exposed, (index, own) in table.items()}
            for key, table in self._merged.named.items()
        }
        for key, table in self._merged.named.items():
            for exposed, (index, _) in table.items():
                self._ever[(key, exposed)] = index
        for hidden in self._merged.hidden if self._reports else ():
            if hidden not in self._reported:
                self._reported.add(hidden)
                self._report_hidden(hidden)
        if self._early is None:
            for capability in sorted(changed):
                if capability in self._announced:
                    self._out.put_nowait(jsonio.dumps({"jsonrpc": "2.0", "method": LIST_CHANGED[capability]}))

    def _report_hidden(self, hidden: Hidden) -> None:
        member = self._members[hidden.place]
        log.warning("aggregate: server %r: %s %r left out (%s)", member.name, hidden.key, hidden.name, hidden.rule)
        if member.side is not None and self._checks.config.rule_on(hidden.rule):
            method = {"resourceTemplates": "resources/templates/list"}.get(hidden.key, f"{hidden.key}/list")
            tool = hidden.name if hidden.key == "tools" else None
            message = Message(RESPONSE, None, method, tool=tool)
            errors = [{"path": "", "msg": hidden.rule, "name": hidden.name}]
            member.side.verdicts.violation(hidden.rule, member.side.frame(SERVER_TO_CLIENT), message, errors, "hidden")

    # -- to the client ------------------------------------------------------------------------------

    def _put(self, document: Mapping[str, Any]) -> None:
        self._out.put_nowait(jsonio.dumps(document))

    def _put_reply(self, reply: Any) -> None:
        self._out.put_nowait(reply.to_bytes())

    def _put_event(self, document: Mapping[str, Any]) -> None:
        """A server's request or notification, queued (or held until the client's ``initialized``)."""
        raw = self._event(document)
        if raw is not None:
            self._out.put_nowait(raw)

    def _event(self, document: Mapping[str, Any]) -> bytes | None:
        """A server's request or notification to go now; ``None``: held until the client's ``initialized``."""
        raw = jsonio.dumps(document)
        if self._early is not None:
            self._early.append(raw)
            return None
        return raw


def _read(raw: bytes, document: Any) -> tuple[Message, dict[str, Any]] | None:
    """What a frame is by its shape (one that came without the chain's reading of it: ``document``,
    parsed here when ``None``); ``None``: not an object."""
    if document is None:
        try:
            document = jsonio.loads(raw)
        except jsonio.JSONSyntaxError:
            return None
    if not isinstance(document, Mapping):
        return None
    if type(document) is not dict:
        document = dict(document)  # (what the chain reads)
    request_id, method = document.get("id"), document.get("method")
    request_id = request_id if is_request_id(request_id) else None
    method = method if isinstance(method, str) else None
    if method is not None:
        kind = NOTIFICATION if "id" not in document else REQUEST
    else:
        kind = ERROR_RESPONSE if "error" in document else RESPONSE
    params = document.get("params")
    params = params if isinstance(params, Mapping) else None
    return Message(kind, request_id, method, params, document=document), document


def _member_id(member: Member, client_id: RequestId) -> RequestId:
    """The id a client's request goes to ``member`` under: the client's own (its reply then goes
    back as it came), unless a request of that id waits there (the aggregate's own, or a routed
    one of the client's not answered yet, booked in ``calls`` alone): one of its own. The server's
    session's rule for every id in flight (ADR 43)."""
    assert member.side is not None

    def fresh() -> str:
        return f"aggregate-{member.index}-client-{next(member.ids)}"

    return member.side.session.free_id(CLIENT_TO_SERVER, client_id, fresh, member.calls)


def _booked(member: Member, member_id: RequestId, call: Call) -> Session:
    """The server's session, with a routed call of its pending there as a booked one would be (what
    its end or a cancellation settles, and the report accounts for)."""
    assert member.side is not None
    session = member.side.session
    session.expect(CLIENT_TO_SERVER, member_id, call.method, call.tool)
    return session


def _has(member: Member, capability: str) -> bool:
    return any(member.lists.get(key) for key, owner in KINDS.values() if owner == capability)
