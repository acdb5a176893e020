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
from collections.abc import Callable, Coroutine
from time import perf_counter
from typing import Any, NamedTuple, Protocol

from ..chain.boundary import contain, render_rejection
from ..chain.compose import Chain, build_chain
from ..chain.policy_check import PolicyCheck
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Message,
    Reply,
    RequestId,
)
from ..execution.approvals import ApprovalBook
from ..execution.grants import GrantSigner
from ..execution.peer import PeerChannel
from ..execution.policy import Policy
from ..observe.events import EventLog
from ..observe.report import ConformanceReport
from ..observe.tracing import Span, Tracer, incoming
from ..registry.lockfile import LockCheck, Lockfile
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from ..registry.versions import stated_version
from ..transport.connection import Connection
from ..transport.http import accepts_event_stream
from .config import GatewayConfig
from .deadlines import Deadlines
from .ending import end_pending, expire
from .readiness import Readiness
from .stateless_hold import admitted_params, can_be_asked, continued, input_required
from .verdicts import Action, Verdicts, stand_in_answer

__all__ = ["Checks", "ClientSide", "GatewaySession", "Handled"]

log = logging.getLogger("mcp_server.gateway")


class Checks(NamedTuple):
    """What every session of one gateway run shares: the schemas, the rules, the report, the limit."""

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


class Handled(NamedTuple):
    """A client frame handled: the gateway's own answer to it (``None``: none), and the request it
    relayed (its reply comes from the upstream, through ``ClientSide.passed``)."""

    reply: Reply | None = None
    relayed: Message | None = None


_NOTHING = Handled()


class ClientSide(Protocol):
    """How the session reaches its client."""

    ordered: bool  # answers in request order, approvals awaited in line (NDJSON); else beside (HTTP)

    def relaying(self, frame: Frame, message: Message) -> None:
        """A client request goes upstream now (HTTP: its reply's stream opens)."""

    async def passed(self, reply: Reply, message: Message | None) -> None:
        """A frame of the upstream's, or an answer standing in for its reply (``message``: what it is)."""

    def cancelled(self, request_id: RequestId) -> None:
        """The client cancelled its request ``request_id``: no reply will come for it."""

    def asker(self, message: Message) -> PeerChannel:
        """How to ask the client about its call ``message`` (an approval by elicitation)."""


def _stateless(session: Session, message: Message, registry: SchemaRegistry) -> bool:
    """A request of the stateless protocol (2026-07-28): no session version, its own stated one."""
    return session.version is None and stated_version(message.params) in registry.stateless_versions


def _can_elicit(policy: Policy, checks: Checks) -> Callable[[Frame, Message], bool]:
    """Whether the gateway can ask the client of a call to approve it: the policy lets approvals go
    that way, and the client declared elicitation: a stateless request on itself (it is asked by
    its result), else at ``initialize``, where (over HTTP) the call's response must be able to
    carry a request (an event stream)."""

    def can(frame: Frame, message: Message) -> bool:
        session = frame.session
        if not policy.approval_by_elicitation:
            return False
        if _stateless(session, message, checks.registry):
            return checks.grants is not None and can_be_asked(message)
        return "elicitation" in (session.client_capabilities or {}) and (
            frame.headers is None or accepts_event_stream(frame.headers)
        )

    return can


def _chains(checks: Checks, tools: UpstreamTools) -> tuple[Chain, Chain]:
    """The client→server and server→client chains of one session (the policy in both)."""
    registry, policy, limit = checks.registry, checks.policy, checks.max_frame_bytes
    inbound = outbound = None
    if policy is not None:
        inbound = PolicyCheck(policy, CLIENT_TO_SERVER, can_hold=_can_elicit(policy, checks))
        outbound = PolicyCheck(policy, SERVER_TO_CLIENT)
    return (
        build_chain(registry, CLIENT_TO_SERVER, tools=tools, max_frame_bytes=limit, policy=inbound),
        build_chain(registry, SERVER_TO_CLIENT, tools=tools, max_frame_bytes=limit, policy=outbound),
    )


def _check(chain: Chain, frame: Frame) -> Message | Rejection:
    try:
        return chain.check(frame)
    except Exception as failure:
        return contain(failure)


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
        checks: Checks,
        upstream: Connection,
        client: Callable[[GatewaySession], ClientSide],
        *,
        transport: str,
        session: Session | None = None,
    ) -> None:
        self.checks, self.upstream, self.transport = checks, upstream, transport
        self.session = session or Session()
        self.events = checks.events
        self.tools = UpstreamTools(checks.registry, waits=True)  # a call is checked once its tool is listed
        self.lock = None if checks.lock is None else LockCheck(checks.lock, checks.lock_server)
        self.verdicts = Verdicts(checks.config, checks.report, checks.registry, self.lock)
        self.tracer = checks.tracer
        self.spans: dict[RequestId, tuple[Span, str]] = {}  # exported spans of calls upstream, and verdicts
        self.inbound, self.outbound = _chains(checks, self.tools)
        self.own = PeerChannel(self._ask_upstream, direction=CLIENT_TO_SERVER, prefix="gateway")
        self.readiness = Readiness(self.session, self.tools, self.own, checks.config.check_wait_seconds)
        self.deadlines = Deadlines(checks.config.request_timeout_seconds, checks.policy, self._expired)
        self.approvals = None if checks.policy is None else ApprovalBook.of(checks.policy)
        self.askers: set[PeerChannel] = set()
        # Approved stateless held calls in flight (id → tool, arguments): an upstream round answering
        # one gets a continuation grant. Only while the request is upstream; nothing between requests.
        self.approved: dict[RequestId, tuple[str, Any]] = {}
        self.heard = asyncio.Event()  # set after each upstream frame is handled
        self._tasks: set[asyncio.Task[None]] = set()
        self.client = client(self)

    async def start(self) -> None:
        await self.upstream.open()
        self.checks.report.open_session(self.session, self.transport)
        if self.events is not None:
            self.events.emit("upstream", session=self.session, status="started")

    # -- client → upstream ------------------------------------------------------------------------

    async def from_client(self, frame: Frame) -> Handled:
        """A client frame: checked (once it can be), then relayed, answered, or dropped."""
        began = 0.0 if self.events is None else perf_counter()
        if self.readiness.initialize is not None:
            await self.readiness.initialized()  # the frame waits for the version that checks it
        verdict = _check(self.inbound, frame)
        if isinstance(verdict, Rejection) and (tool := self.readiness.unlisted(verdict)) is not None:
            assert verdict.message is not None
            await self.readiness.learn(tool, verdict.message)
            verdict = _check(self.inbound, frame)
        if isinstance(verdict, Message):
            mixed = self.verdicts.mixed_versions(self.session, verdict)
            if mixed is None and self.lock is not None:
                mixed = self.verdicts.locked_out(verdict)
            if mixed is None:
                return await self._client_frame(frame, verdict, began)
            verdict = mixed
        elif self.lock is not None and verdict.error is CanonicalError.TOOL_NOT_FOUND and verdict.message is not None:
            verdict = self.verdicts.locked_out(verdict.message) or verdict  # the lock's refusal says more
        return await self._client_refused(frame, verdict, began)

    async def _client_frame(self, frame: Frame, message: Message, began: float) -> Handled:
        self.verdicts.learn(frame, message, self.tools)
        self.checks.report.frame(CLIENT_TO_SERVER, message.method, message.kind, self.session)
        handled, span = _NOTHING, None
        if message.kind is REQUEST:
            if self.tracer.always or frame.headers is not None or (message.params and "_meta" in message.params):
                frame, message, span = self._traced(frame, message)
            handled = await self._relay_request(frame, message)
            if span is not None:
                self._started(span, message, handled)
        elif message.kind is NOTIFICATION:
            if message.method == "notifications/cancelled":
                self._cancelled(message)
            await self._to_upstream(frame.raw, message)
        elif not self._answers_gateway(message):  # a reply to one of the upstream's requests
            await self._to_upstream(frame.raw, message)
        if self.events is not None:
            self.events.frame(frame, message, handled.reply, began, "relay", span)
        return handled

    def _traced(self, frame: Frame, message: Message) -> tuple[Frame, Message, Span | None]:
        """A request with the caller's trace context (``_meta`` or the HTTP header), or any request
        while spans are exported: the gateway's span, its child, goes upstream as the call's parent
        in ``_meta.traceparent`` (and the HTTP upstream's header)."""
        params = message.params
        if (params is not None and type(params) is not dict) or type(message.document) is not dict:
            return frame, message, None  # a refused frame's odd shape, passed on as it came (observe)
        meta = params.get("_meta") if params is not None else None
        assert message.method is not None
        span = self.tracer.start(incoming(meta, frame.headers), message.method, message.tool)
        if span is None:
            return frame, message, None
        carried = {**(params or {}), "_meta": span.meta(meta if type(meta) is dict else None)}
        document = {**message.document, "params": carried}
        size = len(frame.raw) if frame.size is None else frame.size  # the log counts the bytes that came
        frame = frame._replace(raw=jsonio.dumps(document), size=size)
        return frame, message._replace(params=carried, document=document), span

    def _started(self, span: Span, message: Message, handled: Handled, verdict: str = "relayed") -> None:
        """An exported span ends with its call's answer (``verdict``: relayed, or observed: a violation
        passed on); a call answered here (its approval refused) ends it now."""
        if handled.reply is not None:
            self.tracer.end(span, "enforced", error=True)
        elif self.tracer.always and message.id is not None:
            self.spans[message.id] = (span, verdict)

    def _answered(self, request_id: RequestId, ending: str | None, *, error: bool) -> None:
        """The span of the call ``request_id`` ends: answered by the upstream (``ending`` ``None``: its
        verdict stands), or in its place (``answered``, ``timeout``, the session's end)."""
        started = self.spans.pop(request_id, None)
        if started is not None:
            span, verdict = started
            self.tracer.end(span, ending or verdict, error=error)

    async def _client_refused(self, frame: Frame, rejection: Rejection, began: float) -> Handled:
        action = self.verdicts.judge(frame, rejection)
        message, reply, handled, span = rejection.message, None, _NOTHING, None
        if action is Action.OBSERVED or action is Action.PASSED:
            if message is not None and message.kind is REQUEST and message.id is not None and message.method:
                frame, message, span = self._traced(frame, message)
                handled = await self._relay_request(frame, message)
                if span is not None:
                    self._started(span, message, handled, action.value)
            elif message is None or not self._answers_gateway(message):
                await self._to_upstream(frame.raw, message)
        elif action is Action.ANSWERED:  # the client's reply refused: the upstream is answered in its place
            stands_for, reply = self.verdicts.in_place(frame, rejection)
            if not self._answers_gateway(stands_for):
                await self._to_upstream(reply.to_bytes(), stands_for)
        elif action is Action.ENFORCED:
            reply = render_rejection(rejection, self.checks.registry)
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
        """A client request goes upstream (its reply expected), once approved if it must be."""
        assert message.id is not None and message.method is not None
        session = self.session
        held = self._needs_approval(message)
        if held and _stateless(session, message, self.checks.registry):
            admitted = self._admitted(frame, message)
            if isinstance(admitted, Reply):
                return Handled(admitted)
            (frame, message), held = admitted, False
        assert message.id is not None and message.method is not None  # (a relayed frame's message too)
        stated = message.version if session.version is None else None  # a stateless request's own
        session.expect(CLIENT_TO_SERVER, message.id, message.method, message.tool, stated)
        if message.method == "initialize":
            self.readiness.initialize = message.id  # what the client sends next waits for its reply
        self.client.relaying(frame, message)
        if held:
            if not self.client.ordered:  # over HTTP the POST's stream carries the question
                self._spawn(self._send_when_approved(frame.raw, message))
                return Handled(None, message)
            refusal = await self._approve(message)
            if refusal is not None:
                return Handled(refusal)
        await self._send_request(frame.raw, message)
        return Handled(None, message)

    async def _send_request(self, raw: bytes, message: Message) -> None:
        self.deadlines.start(message)
        await self._to_upstream(raw, message)

    async def _to_upstream(self, raw: bytes, about: Message | None) -> None:
        try:
            await self.upstream.send(raw, about)
        except (ConnectionError, OSError):  # the upstream is gone; its end answers what was pending
            log.warning("gateway: the upstream no longer takes frames")

    async def _ask_upstream(self, raw: bytes) -> None:
        """A request of the gateway's own (``tools/list``), with the version it states for itself."""
        document = jsonio.loads(raw)
        params = document.get("params")
        version = stated_version(params) or self.session.version
        await self._to_upstream(raw, Message(REQUEST, document["id"], document["method"], params, version))

    def _cancelled(self, message: Message) -> None:
        request_id = (message.params or {}).get("requestId")
        if isinstance(request_id, str | int):
            self.deadlines.stop(request_id)
            self.approved.pop(request_id, None)
            self.client.cancelled(request_id)
            if self.spans:
                self._answered(request_id, "cancelled", error=True)

    def _answers_gateway(self, message: Message) -> bool:
        """A client's reply to the gateway's own request (an approval's elicitation): it goes no further."""
        if message.kind is REQUEST or message.kind is NOTIFICATION or message.id is None:
            return False
        document = message.document if message.document is not None else {}
        return any(asker.deliver(message.id, document) for asker in list(self.askers))

    # -- approvals ---------------------------------------------------------------------------------

    def _needs_approval(self, message: Message) -> bool:
        policy = self.checks.policy
        return (
            policy is not None
            and message.method == "tools/call"
            and message.tool is not None
            and policy.rule_for(message.tool).approval
        )

    def _admitted(self, frame: Frame, message: Message) -> tuple[Frame, Message] | Reply:
        """A held call of the stateless protocol: the frame to relay and what it is (its grant verified
        and taken out), or the answer: the question (a fresh grant with it) or the refusal."""
        policy, grants = self.checks.policy, self.checks.grants
        assert policy is not None and grants is not None and message.id is not None
        try:
            admitted = admitted_params(grants, policy, message)
        except Rejection as refusal:
            self.verdicts.violation(refusal.error.slug, frame, message)
            self._decided(message, "denied", refusal)
            return stand_in_answer(self.checks.registry, refusal, message.id, message.method, message.version)
        if admitted is None:
            self._decided(message, "held")
            result = input_required(grants, policy, message)
            return Reply(document={"jsonrpc": "2.0", "id": message.id, "result": result}, version=message.version)
        params = admitted.params
        if admitted.decided:
            self._decided(message, "allowed")
        assert message.tool is not None
        self.approved[message.id] = (message.tool, params.get("arguments", {}))
        document = message.document if message.document is not None else jsonio.loads(frame.raw)
        document = {**document, "params": params}
        return frame._replace(raw=jsonio.dumps(document)), message._replace(params=params, document=document)

    async def _send_when_approved(self, raw: bytes, message: Message) -> None:
        refusal = await self._approve(message)
        if refusal is None:
            await self._send_request(raw, message)
        else:
            await self.client.passed(refusal, Message(ERROR_RESPONSE, message.id, message.method))

    async def _approve(self, message: Message) -> Reply | None:
        """Hold a ``tools/call`` until its client's user approves it (an elicitation request) or the
        deadline passes: ``None`` when approved, else the refusal to answer the client with."""
        assert self.approvals is not None and message.tool is not None and message.id is not None
        arguments = (message.params or {}).get("arguments", {})
        held = self.approvals.hold(message.tool, arguments, self.session.id)
        self._decided(message, "held")
        asker = self.client.asker(message)
        self.askers.add(asker)
        asked = asyncio.ensure_future(
            asker.elicit_approval(self.session)(message.tool, held.arguments, held.arguments_sha256)
        )
        try:
            await self.approvals.wait(held, also=asked)
        except Rejection as refusal:
            self.session.settle(CLIENT_TO_SERVER, message.id)
            self.verdicts.violation(refusal.error.slug, self._stand_in(CLIENT_TO_SERVER), message)
            self._decided(message, "denied", refusal)
            return stand_in_answer(self.checks.registry, refusal, message.id, message.method, message.version)
        finally:
            self.askers.discard(asker)
        self._decided(message, "allowed")
        return None

    def _decided(self, message: Message, status: str, refusal: Rejection | None = None) -> None:
        """The policy's decision on a held call, as an event of the run's log (the report's page lists them)."""
        if self.events is not None:
            self.events.emit(
                "policy",
                session=self.session,
                request_id=message.id,
                method=message.method,
                tool_id=message.tool,
                status=status,
                policy_violation=refusal is not None,
                error=None if refusal is None else refusal.summary(),
            )

    def _continued(self, frame: Frame, message: Message) -> Frame:
        """The upstream's answer to an approved held call: when it asks for more input, its state goes
        back inside a continuation grant (the retry is not asked to approve again)."""
        assert message.id is not None and self.checks.policy is not None and self.checks.grants is not None
        tool, arguments = self.approved.pop(message.id)
        result = (message.document or {}).get("result")
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            return frame
        wrapped = continued(self.checks.grants, self.checks.policy, tool, arguments, result)
        return frame._replace(raw=jsonio.dumps({**(message.document or {}), "result": wrapped}))

    def _stand_in(self, direction: Direction) -> Frame:
        """A frame of no bytes, for what the gateway reports of a session without one in hand."""
        return Frame(b"", self.transport, self.session, 0, direction)

    # -- upstream → client ------------------------------------------------------------------------

    async def pump_upstream(self) -> None:
        """Every frame the upstream sends, through the chain, until it ends."""
        async for raw, size in self.upstream.frames():
            await self.from_upstream(raw, size)

    async def from_upstream(self, raw: bytes, size: int | None) -> None:
        began = 0.0 if self.events is None else perf_counter()
        frame = Frame(raw, "upstream", self.session, size, SERVER_TO_CLIENT)
        verdict = _check(self.outbound, frame)
        try:
            if isinstance(verdict, Message):
                await self._upstream_frame(frame, verdict, began)
            else:
                await self._upstream_refused(frame, verdict, began)
        finally:
            self.readiness.release()
            self.heard.set()

    async def _upstream_frame(self, frame: Frame, message: Message, began: float) -> None:
        frame = self.verdicts.learn(frame, message, self.tools)
        self.checks.report.frame(SERVER_TO_CLIENT, message.method, message.kind, self.session)
        if self._claimed(message):
            pass  # the reply to a request of the gateway's own: it goes no further
        else:
            if self.approved and message.id in self.approved and message.kind is not REQUEST:
                frame = self._continued(frame, message)
            self._track(message)
            await self.client.passed(_relayed(frame, message), message)
        if self.events is not None:
            self.events.frame(frame, message, None, began, "relay")

    async def _upstream_refused(self, frame: Frame, rejection: Rejection, began: float) -> None:
        action = self.verdicts.judge(frame, rejection)
        message, reply = rejection.message, None
        if action is Action.OBSERVED or action is Action.PASSED:
            if message is None or not self._claimed(message):
                self._track(message)
                await self.client.passed(_relayed(frame, message), message)
        elif action is Action.ANSWERED:  # the upstream's reply refused: the client is answered in its place
            stands_for, reply = self.verdicts.in_place(frame, rejection)
            if not self._claimed(stands_for):
                self.deadlines.stop(stands_for.id)
                if self.spans and stands_for.id is not None:
                    self._answered(stands_for.id, "answered", error=True)
                await self.client.passed(reply, stands_for)
        elif action is Action.ENFORCED:  # an invalid request of the upstream's own: it is answered
            reply = render_rejection(rejection, self.checks.registry)
            if reply is not None:
                await self._to_upstream(reply.to_bytes(), None)
        if self.events is not None:
            self._log_refused(frame, rejection, action, reply, began)

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
                stated = message.version if self.session.version is None else None
                self.session.expect(SERVER_TO_CLIENT, message.id, message.method, None, stated)
        elif message.kind is not NOTIFICATION:
            self.deadlines.stop(message.id)
            if self.spans:
                self._answered(message.id, None, error=message.kind is ERROR_RESPONSE)

    # -- timeouts and the end ------------------------------------------------------------------

    def _expired(self, request: Message, error: CanonicalError) -> None:
        self._spawn(self._expire(request, error))

    async def _expire(self, request: Message, error: CanonicalError) -> None:
        """Past its time: the client gets a retryable error (in the upstream's place, when its reply
        would have come) and the upstream ``notifications/cancelled``."""
        expired = expire(self.session, self.verdicts, request, error)
        if request.id is not None:
            self.approved.pop(request.id, None)
        if expired is None:
            return  # answered or cancelled meanwhile
        cancel, stands_for, answer = expired
        if self.spans and stands_for.id is not None:
            self._answered(stands_for.id, "timeout", error=True)
        with contextlib.suppress(ConnectionError, OSError):
            await self.client.passed(answer, stands_for)
        await self._to_upstream(jsonio.dumps(cancel.document), cancel.message)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle_all(self, reason: str, *, upstream_alive: bool) -> None:
        """The session ends (``reason``): what still waits is settled as ``end_pending`` says."""
        self.readiness.close()
        self.deadlines.close()
        for asker in list(self.askers):
            asker.close()
        cancels, answers = end_pending(self.session, self.verdicts, reason)
        for request_id in list(self.spans):
            self._answered(request_id, reason, error=True)
        for cancel in cancels if upstream_alive else ():
            await self._to_upstream(jsonio.dumps(cancel.document), cancel.message)
        with contextlib.suppress(ConnectionError, OSError):
            for stands_for, answer in answers:
                await self.client.passed(answer, stands_for)

    async def close_upstream(self, closing: asyncio.Future[int | None] | None = None) -> int | None:
        """Stop the upstream (or wait for the stop under way) and the session's own tasks."""
        for task in list(self._tasks):
            task.cancel()
        exit_code = await (closing if closing is not None else self.upstream.close())
        if self.events is not None:
            self.events.emit("upstream", session=self.session, status="exited", detail={"exit_code": exit_code})
        return exit_code
