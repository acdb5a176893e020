"""One gateway session: a client and its upstream, each frame through its direction's chain.

The client→server path checks (waiting first for what checks a frame), decides (enforce or observe),
and relays to the upstream; the server→client path does the same the other way and hands what
passes to the client's side. The ``Session`` owns matching; the log observes each frame once it is
handled. How frames reach the client (in request order on NDJSON, on the POSTs' streams over HTTP)
is the client side's (``ClientSide``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Coroutine
from time import perf_counter
from typing import Any, NamedTuple, Protocol

from ..chain.error_boundary import render_rejection
from ..chain.policy_check import PolicyCheck
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.settings import DEFAULT_MAX_SERVER_FRAME_BYTES
from ..core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Message,
    Reply,
    RequestId,
    is_request_id,
)
from ..execution.grants import GrantSigner
from ..execution.peer import PeerChannel
from ..execution.policy import Policy
from ..execution.single_use import SingleUse
from ..ledger.ledger import Ledger
from ..ledger.verdicts import Action
from ..observe.events import EventLog
from ..observe.report import ConformanceReport
from ..observe.tracing import Span, Tracer
from ..registry.lockfile import LockCheck, Lockfile
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from ..registry.versions import stateless_version
from ..transport.connection import Connection, receive_all
from ..transport.http import accepts_event_stream
from .attribution import attribute, unmatched
from .config import GatewayConfig
from .deadlines import Deadlines
from .ending import end_pending, expire
from .held import HeldCalls, Hold, hold_of
from .own_ids import restored, unique
from .readiness import Readiness
from .spans import CallSpans
from .stateless_hold import can_be_asked

__all__ = ["ClientSide", "GatewayRun", "GatewaySession", "Handled", "Routed"]

log = logging.getLogger("mcp_server.gateway")


class GatewayRun(NamedTuple):
    """What every session of one gateway run shares: the schemas, the rules, the report, the limits
    (``max_frame_bytes``: what the client sends)."""

    registry: SchemaRegistry
    config: GatewayConfig
    report: ConformanceReport
    max_frame_bytes: int
    policy: Policy | None = None
    events: EventLog | None = None
    lock: Lockfile | None = None  # the tool lockfile (``--lock``), and its server's key when given
    lock_server: str | None = None
    tracer: Tracer = Tracer()  # W3C trace context across; OpenTelemetry's export when on
    grants: GrantSigner | None = None  # signs a stateless held call's approval (any replica verifies)
    single_use: SingleUse | None = None  # where an approval is spent across replicas (``MCP_REDIS_URL``)
    max_server_frame_bytes: int = DEFAULT_MAX_SERVER_FRAME_BYTES  # the limit of what the upstream sends


class Handled(NamedTuple):
    """A client frame handled: the gateway's own answer to it (``None``: none), and the request it
    relayed (its reply comes from the upstream, through ``ClientSide.passed``)."""

    reply: Reply | None = None
    relayed: Message | None = None


_NOTHING = Handled()


class Routed(NamedTuple):
    """A reply an aggregate hands on unchecked (ADR 37): the server's answer to a client request it
    relayed at the client's version. This session checks and books it; the server's own session
    (``section``) is where its violation is the server's, and where the report counts it too
    (``carried``: the section's counts of what it did not check itself, ADR 38)."""

    document: dict[str, Any]  # the reply, parsed (the aggregate read its id)
    section: Session
    carried: Counter[tuple[Direction, str | None]]


class ClientSide(Protocol):
    """How the session reaches its client."""

    ordered: bool  # answers in request order, approvals awaited in line (NDJSON); else beside (HTTP)

    def relaying(self, frame: Frame, message: Message) -> None:
        """A client request goes upstream now (HTTP: its reply's stream opens)."""

    async def passed(self, reply: Reply, message: Message | None) -> None:
        """A frame of the upstream's, or an answer standing in for its reply (``message``: what it is)."""

    def cancelled(self, request_id: RequestId) -> bool:
        """The client cancels its request ``request_id``: no reply will come for it. ``False``: the
        request is not this client's to cancel (the cancellation goes no further)."""

    def asker(self, message: Message) -> PeerChannel:
        """How to ask the client about its call ``message`` (an approval by elicitation)."""


def _stateless(session: Session, message: Message, registry: SchemaRegistry) -> bool:
    """A request of the stateless protocol (2026-07-28): no session version, its own stated one."""
    return session.version is None and stateless_version(message.params, registry) is not None


def _can_elicit(policy: Policy, run: GatewayRun) -> Callable[[Frame, Message], bool]:
    """Whether the gateway can ask the client of a call to approve it: the policy lets approvals go
    that way, and the client declared elicitation: a stateless request on itself (it is asked by
    its result), else at ``initialize``, where (over HTTP) the call's response must be able to
    carry a request (an event stream)."""

    def can(frame: Frame, message: Message) -> bool:
        session = frame.session
        if not policy.approval_by_elicitation:
            return False
        if _stateless(session, message, run.registry):
            return run.grants is not None and can_be_asked(message)
        return "elicitation" in (session.client_capabilities or {}) and (
            frame.headers is None or accepts_event_stream(frame.headers)
        )

    return can


def _policies(run: GatewayRun) -> tuple[PolicyCheck | None, PolicyCheck | None]:
    """The policy's stage of each direction (a call it holds may be asked of the client)."""
    policy = run.policy
    if policy is None:
        return None, None
    return PolicyCheck(policy, CLIENT_TO_SERVER, can_hold=_can_elicit(policy, run)), PolicyCheck(
        policy, SERVER_TO_CLIENT
    )


def _relayed(frame: Frame, message: Message | None) -> Reply:
    """A frame passed on as it came, with what an HTTP response of it needs (version, error code)."""
    if message is None:
        return Reply(raw=frame.raw)
    code = None
    if message.kind is ERROR_RESPONSE and message.document is not None:
        error = message.document.get("error")
        code = error.get("code") if isinstance(error, dict) else None
    return Reply(raw=frame.raw, version=message.version, code=code if isinstance(code, int) else None)


class GatewaySession:
    """A client and one upstream: both paths, the waits, the deadlines, the approvals, the end."""

    def __init__(
        self,
        run: GatewayRun,
        upstream: Connection,
        client: Callable[[GatewaySession], ClientSide],
        *,
        transport: str,
        session: Session | None = None,
    ) -> None:
        self.run, self.upstream, self.transport = run, upstream, transport
        self.session = session if session is not None else Session()
        self.events = run.events
        lock = None if run.lock is None else LockCheck(run.lock, run.lock_server)
        self.ledger = Ledger(
            run.registry,
            run.config,
            run.report,
            session=self.session,
            tools=UpstreamTools(run.registry, waits=True),  # a call is checked once its tool is listed
            limits=(run.max_frame_bytes, run.max_server_frame_bytes),
            lock=lock,
            policies=_policies(run),
            listings_judged=getattr(upstream, "listings_judged", False),  # (an aggregate's: ADR 39)
        )
        self.tools, self.verdicts = self.ledger.tools, self.ledger.verdicts
        self.spans = CallSpans(run.tracer)  # an observer: told what the session did, it decides nothing
        self.own = PeerChannel(self._ask_upstream, direction=CLIENT_TO_SERVER, prefix="gateway")
        self.readiness = Readiness(self.session, self.tools, self.own, run.config.check_wait_seconds)
        self.deadlines = Deadlines(run.config.request_timeout_seconds, run.policy, self._expired)
        self.held = HeldCalls(
            self.session,
            self.verdicts,
            run.policy,
            grants=run.grants,
            single_use=run.single_use,
            events=self.events,
            transport=transport,
        )
        self.heard = asyncio.Event()  # set after each upstream frame is handled
        self._tasks: set[asyncio.Task[None]] = set()
        self.client = client(self)

    async def start(self) -> None:
        await self.upstream.open()
        self.run.report.open_session(self.session, self.transport)
        if self.events is not None:
            self.events.emit("upstream", session=self.session, status="started")

    # -- client → upstream ------------------------------------------------------------------------

    async def from_client(self, frame: Frame) -> Handled:
        """A client frame: checked (once it can be), then relayed, answered, or dropped."""
        began = 0.0 if self.events is None else perf_counter()
        if self.readiness.initialize is not None:
            await self.readiness.initialized()  # the frame waits for the version that checks it
        verdict = self.ledger.check(frame)
        if isinstance(verdict, Rejection) and (tool := self.readiness.unlisted(verdict)) is not None:
            assert verdict.message is not None
            await self.readiness.learn(tool, verdict.message)
            verdict = self.ledger.check(frame)
        if isinstance(verdict, Message):
            return await self._client_frame(frame, verdict, began)
        return await self._client_refused(frame, verdict, began)

    async def _client_frame(self, frame: Frame, message: Message, began: float) -> Handled:
        frame, message = unique(self.session, CLIENT_TO_SERVER, frame, message)
        cancel = message.kind is NOTIFICATION and message.method == "notifications/cancelled"
        if cancel and not self._cancelled(message):
            if self.events is not None:  # not the client's request to cancel: it goes no further
                self.events.frame(frame, message, None, began)
            return _NOTHING
        self.ledger.passed(frame, message)
        handled, span = _NOTHING, None
        if message.kind is REQUEST:
            if self.spans.wanted(frame, message):
                frame, message, span = self.spans.start(frame, message)
            handled = await self._relay_request(frame, message)
            if span is not None:
                self.spans.relayed(span, message, handled.reply is not None)
        elif message.kind is NOTIFICATION or not self.held.answers_asker(message):  # (or a reply to the upstream)
            await self._to_upstream(frame.raw, message)
        if self.events is not None:
            self.events.frame(frame, message, handled.reply, began, "relay", span)
        return handled

    async def _client_refused(self, frame: Frame, rejection: Rejection, began: float) -> Handled:
        action = self.verdicts.judge(frame, rejection)
        message, reply, handled, span = rejection.message, None, _NOTHING, None
        if action is Action.OBSERVED or action is Action.PASSED:
            if message is not None:
                frame, message = unique(self.session, CLIENT_TO_SERVER, frame, message)
            if message is not None and message.kind is REQUEST and message.id is not None and message.method:
                frame, message, span = self.spans.start(frame, message)
                handled = await self._relay_request(frame, message)
                if span is not None:
                    self.spans.relayed(span, message, handled.reply is not None, action.value)
            elif message is None or not self.held.answers_asker(message):
                await self._to_upstream(frame.raw, message)
        elif action is Action.ANSWERED:  # the client's reply refused: the upstream is answered in its place
            stands_for, reply = self.verdicts.in_place(frame, rejection)
            if not self.held.answers_asker(stands_for):
                await self._to_upstream(reply.to_bytes(), stands_for)
        elif action is Action.ENFORCED:
            reply = render_rejection(rejection, self.run.registry, self.tools, self.session.version)
            handled = Handled(reply)
        if self.events is not None:
            self._log_refused(frame, rejection, action, reply, began, span)
        return handled

    def _log_refused(
        self,
        frame: Frame,
        rejection: Rejection,
        action: Action,
        reply: Reply | None,
        began: float,
        span: Span | None = None,
    ) -> None:
        """A refused frame's row: its sender's answer is a reply of its own in the log; an answer in
        place goes the other way, to the party that waited (the refused frame was not delivered)."""
        assert self.events is not None
        if action is Action.PASSED:
            self.events.frame(frame, rejection.message, None, began, "relay", span)
        else:
            reply = None if action is Action.ANSWERED else reply
            self.events.refused(frame, rejection, reply, began, action.value, span)

    async def _relay_request(self, frame: Frame, message: Message) -> Handled:
        """A client request goes upstream (its reply expected), once approved if the policy holds it."""
        assert message.id is not None and message.method is not None
        stateless = _stateless(self.session, message, self.run.registry)
        hold = hold_of(self.run.policy, message, stateless=stateless, ordered=self.client.ordered)
        if hold is Hold.BY_GRANT:
            admitted = await self.held.admitted(frame, message)
            if isinstance(admitted, Reply):
                return Handled(restored(self.session, CLIENT_TO_SERVER, admitted, message.id))
            frame, message = admitted
        assert message.id is not None and message.method is not None  # (a relayed frame's message too)
        self.session.follow(CLIENT_TO_SERVER, message)
        if message.method == "initialize":
            self.readiness.initialize = message.id  # what the client sends next waits for its reply
        self.client.relaying(frame, message)
        if hold is Hold.BESIDE:  # over HTTP the POST's stream carries the question
            self._spawn(self._send_when_approved(frame.raw, message))
            return Handled(None, message)
        if hold is Hold.IN_LINE:
            refusal = await self.held.approve(message, self.client.asker(message))
            if refusal is not None:
                return Handled(restored(self.session, CLIENT_TO_SERVER, refusal, message.id))
        await self._send_request(frame.raw, message)
        return Handled(None, message)

    async def _send_request(self, raw: bytes, message: Message) -> None:
        self.deadlines.start(message)
        await self._to_upstream(raw, message)

    async def _to_upstream(self, raw: bytes, about: Message | None) -> None:
        if about is not None and (about.kind is RESPONSE or about.kind is ERROR_RESPONSE):
            raw = restored(self.session, SERVER_TO_CLIENT, Reply(raw=raw), about.id).to_bytes()
        try:
            await self.upstream.send(raw, about)
        except (ConnectionError, OSError):  # the upstream is gone; its end answers what was pending
            log.warning("gateway: the upstream no longer takes frames")

    async def _ask_upstream(self, raw: bytes) -> None:
        """A request of the gateway's own (``tools/list``), with the version it states for itself."""
        document = jsonio.loads(raw)
        params = document.get("params")
        version = stateless_version(params, self.run.registry) or self.session.version
        await self._to_upstream(raw, Message(REQUEST, document["id"], document["method"], params, version))

    def _cancelled(self, message: Message) -> bool:
        """A client's cancellation: whether it goes upstream (a client cancels only its own requests)."""
        request_id = (message.params or {}).get("requestId")
        if is_request_id(request_id):
            if not self.client.cancelled(request_id):
                return False
            self.deadlines.stop(request_id)
            self.held.forget(request_id)
            self.spans.answered(request_id, "cancelled", error=True)
        return True

    async def _send_when_approved(self, raw: bytes, message: Message) -> None:
        refusal = await self.held.approve(message, self.client.asker(message))
        if refusal is None:
            await self._send_request(raw, message)
        else:
            await self._to_client(refusal, Message(ERROR_RESPONSE, message.id, message.method))

    # -- upstream → client ------------------------------------------------------------------------

    async def _to_client(self, reply: Reply, message: Message | None) -> None:
        """A frame for the client (``message``: what it is, or the reply it stands for): the answer to
        a request of the client's renamed on its way up goes back under the client's own id."""
        request_id = None
        if message is not None and message.kind is not REQUEST and message.kind is not NOTIFICATION:
            request_id = message.id
        await self.client.passed(restored(self.session, CLIENT_TO_SERVER, reply, request_id), message)

    async def pump_upstream(self) -> None:
        """Every frame the upstream sends, through the chain, until it ends."""
        await receive_all(self.upstream, self.from_upstream)

    async def from_upstream(
        self, raw: bytes, size: int | None, carried_by: RequestId | None = None, routed: Routed | None = None
    ) -> None:
        """One upstream frame (``carried_by``: the request whose HTTP response carried it; ``routed``:
        an aggregate's server's reply to a relayed request, parsed)."""
        began = 0.0 if self.events is None else perf_counter()
        frame = Frame(raw, "upstream", self.session, size, SERVER_TO_CLIENT)
        verdict = self.ledger.check(frame, None if routed is None else routed.document)
        try:
            if carried_by is not None and unmatched(verdict, carried_by, self.session):
                await self._attributed(frame, verdict, carried_by, began)
            elif isinstance(verdict, Message):
                if routed is not None:
                    routed.carried[(SERVER_TO_CLIENT, verdict.method)] += 1
                await self._upstream_frame(frame, verdict, began)
            else:
                await self._upstream_refused(frame, verdict, began, routed)
        finally:
            self.readiness.release()
            self.heard.set()

    async def _upstream_frame(self, frame: Frame, message: Message, began: float) -> None:
        frame, message = unique(self.session, SERVER_TO_CLIENT, frame, message)
        frame = self.ledger.passed(frame, message)
        if self._claimed(message):
            pass  # the reply to a request of the gateway's own: it goes no further
        else:
            if self.held.approved and message.kind is not REQUEST:
                frame = self.held.continued(frame, message)
            self._track(message)
            await self._to_client(_relayed(frame, message), message)
        if self.events is not None:
            self.events.frame(frame, message, None, began, "relay")

    async def _upstream_refused(
        self, frame: Frame, rejection: Rejection, began: float, routed: Routed | None = None
    ) -> None:
        message, reply = rejection.message, None
        if routed is None:
            action = self.verdicts.judge(frame, rejection)
        else:  # the server's fault, in its section (by this session's modes: its exposed tool names)
            action = self.verdicts.judge(frame._replace(session=routed.section), rejection)
            assert message is not None  # (a routed reply was parsed: it is read as far as its kind)
            self.run.report.frame(SERVER_TO_CLIENT, message.method, message.kind, self.session)
        if action is Action.OBSERVED or action is Action.PASSED:
            if message is not None:
                frame, message = unique(self.session, SERVER_TO_CLIENT, frame, message)
            if message is None or not self._claimed(message):
                self._track(message)
                await self._to_client(_relayed(frame, message), message)
        elif action is Action.ANSWERED:  # the upstream's reply refused: the client is answered in its place
            stands_for, reply = self.verdicts.in_place(frame, rejection)
            if not self._claimed(stands_for):
                self.deadlines.stop(stands_for.id)
                if stands_for.id is not None:
                    self.spans.answered(stands_for.id, "answered", error=True)
                await self._to_client(reply, stands_for)
        elif action is Action.ENFORCED:  # an invalid request of the upstream's own: it is answered
            reply = render_rejection(rejection, self.run.registry, self.tools, self.session.version)
            if reply is not None:
                await self._to_upstream(reply.to_bytes(), None)
        if self.events is not None:
            self._log_refused(frame, rejection, action, reply, began)

    async def _attributed(
        self, frame: Frame, verdict: Message | Rejection, request_id: RequestId, began: float
    ) -> None:
        """A reply on the HTTP response of the request ``request_id`` whose own id is missing or
        wrong: that request's answer, as ``attribute`` decides (ADR 25)."""
        pending = self.session.settle(CLIENT_TO_SERVER, request_id)
        assert pending is not None
        self.run.report.frame(SERVER_TO_CLIENT, pending.method, ERROR_RESPONSE, self.session)
        self.deadlines.stop(request_id)
        self.spans.answered(request_id, "answered", error=True)
        stands_for, reply, action = attribute(frame, verdict, request_id, pending, self.ledger.modes, self.run.registry)
        if action is not None:
            assert isinstance(verdict, Rejection)
            self.verdicts.violation(verdict.error.slug, frame, stands_for, verdict.errors, action.value)
        await self._to_client(reply, stands_for)
        if self.events is None:
            return
        if action is None:
            self.events.frame(frame, stands_for, None, began, "relay")
        else:
            assert isinstance(verdict, Rejection)
            self._log_refused(frame, verdict, action, None, began)

    def _claimed(self, message: Message) -> bool:
        """The upstream's reply to a request of the gateway's own (``own``): delivered to it."""
        if not self.own.asking or message.kind is REQUEST or message.kind is NOTIFICATION:
            return False
        return message.id is not None and self.own.deliver(message.id, message.document or {})

    def _track(self, message: Message | None) -> None:
        """An upstream frame on its way to the client: a reply stops its request's timer, a request
        of the upstream's own is expected to be answered."""
        if message is None or message.id is None:
            return
        if message.kind is REQUEST:
            if message.method is not None:
                self.session.follow(SERVER_TO_CLIENT, message)
        elif message.kind is not NOTIFICATION:
            self.deadlines.stop(message.id)
            self.spans.answered(message.id, None, error=message.kind is ERROR_RESPONSE)

    # -- timeouts and the end ------------------------------------------------------------------

    def _expired(self, request: Message, error: CanonicalError) -> None:
        self._spawn(self._expire(request, error))

    async def _expire(self, request: Message, error: CanonicalError) -> None:
        """Past its time: the client gets a retryable error (in the upstream's place, when its reply
        would have come) and the upstream ``notifications/cancelled``."""
        expired = expire(self.session, self.verdicts, request, error)
        if request.id is not None:
            self.held.forget(request.id)
        if expired is None:
            return  # answered or cancelled meanwhile
        cancel, stands_for, answer = expired
        if stands_for.id is not None:
            self.spans.answered(stands_for.id, "timeout", error=True)
        with contextlib.suppress(ConnectionError, OSError):
            await self._to_client(answer, stands_for)
        await self._to_upstream(jsonio.dumps(cancel.document), cancel.message)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle_all(self, reason: str, *, upstream_alive: bool) -> None:
        """The session ends (``reason``): what still waits is settled as ``end_pending`` says."""
        self.readiness.close()
        self.deadlines.close()
        self.held.close()
        cancels, answers = end_pending(self.session, self.verdicts, reason)
        self.spans.end_all(reason)
        for cancel in cancels if upstream_alive else ():
            await self._to_upstream(jsonio.dumps(cancel.document), cancel.message)
        with contextlib.suppress(ConnectionError, OSError):
            for stands_for, answer in answers:
                await self._to_client(answer, stands_for)

    async def close_upstream(self, closing: asyncio.Future[int | None] | None = None) -> int | None:
        """Stop the upstream (or wait for the stop under way) and the session's own tasks."""
        for task in list(self._tasks):
            task.cancel()
        exit_code = await (closing if closing is not None else self.upstream.close())
        if self.events is not None:
            self.events.emit("upstream", session=self.session, status="exited", detail={"exit_code": exit_code})
        return exit_code
