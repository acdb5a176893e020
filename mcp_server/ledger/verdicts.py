"""What becomes of a frame the chain refused (enforce or observe, per direction and tool), and what
a frame teaches the session (the version an ``initialize`` reply answered, valid or not; the
upstream's tools and cancellations, from what passes).

Decisions and bookkeeping only, no I/O: the gateway session and ``check`` carry them out. A
violation is counted in the report (and, with a log, an event) once, here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from ..chain.error_boundary import render_rejection
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
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
from ..observe.report import ConformanceReport
from ..registry.lockfile import REMOVED, RENAMED, LockCheck
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from ..registry.versions import answered_version
from .modes import INVALID_TOOL_SCHEMA, TOOL_DEFINITION_CHANGED, Mode, Modes

__all__ = ["POLLUTION", "Action", "Verdicts", "answer_in_place", "emit", "patch_errors", "refused_reply"]

log = logging.getLogger("mcp_server.gateway")

POLLUTION = "upstream_stdout_pollution"
# What the upstream wrote that is not a JSON-RPC message at all is never delivered, in any mode.
_NOT_JSON_RPC = frozenset({CanonicalError.PARSE_ERROR, CanonicalError.INVALID_ENVELOPE})


class Action(StrEnum):
    """What becomes of a refused frame (the value is the event log's ``action``)."""

    LATE = "late"  # the reply to a request settled already (cancelled, timed out): dropped, not wrong
    QUARANTINED = "quarantined"  # upstream output that is no JSON-RPC at all: never delivered
    PASSED = "passed"  # its rule is off: it goes on as if valid, uncounted
    OBSERVED = "observed"  # observe mode: it goes on, counted
    ANSWERED = "answered"  # a refused reply: the party waiting for it is answered in its place
    ENFORCED = "enforced"  # refused: its sender is answered (a request) or nothing (anything else)


def emit(event: Mapping[str, Any]) -> None:
    log.warning("violation %s", jsonio.dumps(event).decode())


def _unlogged(event: Mapping[str, Any]) -> None:
    """A violation counted in the report only."""


def answer_in_place(
    registry: SchemaRegistry, rejection: Rejection, request_id: RequestId, method: str | None, version: str | None
) -> Reply:
    """The answer the gateway gives in a peer's place to the request ``request_id`` (of ``method``,
    read under ``version``): ``rejection`` rendered as that version prescribes."""
    rejection.message = Message(REQUEST, request_id, method, version=version)
    rendered = render_rejection(rejection, registry)
    assert rendered is not None  # a request is always answered
    return rendered


def refused_reply(rejection: Rejection, direction: Direction) -> Rejection:
    """What the party waiting for a reply refused going in ``direction`` gets in its place: the
    sender's invalid reply naming the rule broken (``data.rule``), or the violation said as such (a
    tool's output, a reply the policy refused)."""
    if rejection.error is CanonicalError.INVALID_TOOL_OUTPUT or rejection.extra.get("policy_violation"):
        member = rejection.error
    elif rejection.error is CanonicalError.PAYLOAD_TOO_LARGE:
        member = CanonicalError.REPLY_TOO_LARGE
    elif direction is SERVER_TO_CLIENT:
        member = CanonicalError.UPSTREAM_INVALID_REPLY
    else:
        member = CanonicalError.CLIENT_INVALID_REPLY
    return Rejection(member, rejection.errors, extra={**rejection.extra, "rule": rejection.error.slug})


def _answerable(message: Message | None, frame: Frame) -> bool:
    """A refused reply whose request is known: the party waiting for it can be answered in its place."""
    if message is None or message.id is None:
        return False
    return message.method is not None or frame.session.peek(frame.direction.opposite, message.id) is not None


def patch_errors(patch: Any, was: str | None = None) -> list[dict[str, Any]]:
    """An RFC 6902 patch as a violation's errors: each operation at its path (a rename says the old
    name in place of its ``/name`` operation)."""
    if was is None:
        return [{"path": op["path"], "msg": op["op"]} for op in patch or ()]
    others = [{"path": op["path"], "msg": op["op"]} for op in patch or () if op["path"] != "/name"]
    return [{"path": "/name", "msg": f"locked as {was!r}"}, *others]


class Verdicts:
    """One run's decisions (its modes, its report, its schemas), for one session's frames."""

    __slots__ = ("_emit", "listings_judged", "lock", "modes", "quarantine", "registry", "report")

    def __init__(
        self,
        modes: Modes,
        report: ConformanceReport,
        registry: SchemaRegistry,
        lock: LockCheck | None = None,
        *,
        logged: bool = True,
        quarantine: bool = True,
        listings_judged: bool = False,
    ) -> None:
        """``logged``: each violation is a warning on the run's stderr too (the live gateway's; ``check``
        reports them in its own output). ``quarantine``: what the upstream sends that is no JSON-RPC
        is its stdout polluted (a live upstream's); a capture's frames are reported under their rule.
        ``listings_judged``: the upstream's tool listings are made of tools judged already, each at
        its own server (an aggregate's merged lists): learnt, their findings not reported again."""
        self._emit = emit if logged else _unlogged
        self.listings_judged = listings_judged
        self.quarantine = quarantine
        self.modes = modes
        self.report = report
        self.registry = registry
        self.lock = lock  # the session's listing held against the tool lockfile (``--lock``)

    def judge(self, frame: Frame, rejection: Rejection) -> Action:
        """The action for a refused frame, counted in the report (a violation unless late, passed)."""
        message, session, direction = rejection.message, frame.session, frame.direction
        kind = None if message is None else message.kind
        self.report.frame(direction, message.method if message is not None else "(not json-rpc)", kind, session)
        error = rejection.error
        if (
            error is CanonicalError.UNKNOWN_RESPONSE_ID
            and message is not None
            and message.id is not None
            and session.late(direction.opposite, message.id)
        ):
            return Action.LATE
        if direction is SERVER_TO_CLIENT and error in _NOT_JSON_RPC and self.quarantine:
            excerpt = frame.raw[:200].decode("utf-8", "replace")
            self._emit(
                self.report.violation(
                    POLLUTION, direction=direction, action="quarantined", excerpt=excerpt, session=session
                )
            )
            return Action.QUARANTINED
        if error is CanonicalError.DUPLICATE_REQUEST_ID:  # refused in every mode: relayed, a reply is lost (ADR 43)
            self.violation(error.slug, frame, message, rejection.errors, Action.ENFORCED)
            return Action.ENFORCED
        if not self.modes.rule_on(error.slug):
            return Action.PASSED
        tool = None if message is None else message.tool
        observe = (
            self.modes.mode_for(direction, tool) is Mode.OBSERVE
            # a frame over its limit is relayed unchecked when it was held whole (RELAY_CEILING_BYTES)
            and (error is not CanonicalError.PAYLOAD_TOO_LARGE or frame.size is None)
            # one nested past the reader cannot be followed at all: refused in every mode (ADR 40)
            and error is not CanonicalError.NESTED_TOO_DEEP
            and not rejection.extra.get("policy_violation")  # the policy is enforced in every mode
        )
        action = Action.OBSERVED if observe else Action.ENFORCED
        self.violation(error.slug, frame, message, rejection.errors, action)
        if action is Action.ENFORCED and (kind is RESPONSE or kind is ERROR_RESPONSE) and _answerable(message, frame):
            return Action.ANSWERED
        return action

    def violation(
        self, rule: str, frame: Frame, message: Message | None, errors: Any = (), action: str = "enforced"
    ) -> None:
        """A rule broken by the sender of ``frame`` (as far as ``message`` says what it was)."""
        kind = method = tool = request_id = None
        if message is not None:
            kind, request_id, method, tool = message.kind, message.id, message.method, message.tool
        self._emit(
            self.report.violation(
                rule,
                direction=frame.direction,
                method=method,
                tool=tool,
                request_id=request_id,
                errors=errors,
                action=action,
                kind=kind,
                session=frame.session,
                document=None if message is None else message.document,
            )
        )

    def in_place(self, frame: Frame, rejection: Rejection) -> tuple[Message, Reply]:
        """A refused reply: the request it answers is settled, and the party that waits for it (the
        client for the upstream's reply, the upstream for the client's) gets an error for the same
        id naming the violation (``data.rule``). Returns the request answered and the answer."""
        message = rejection.message
        assert message is not None and message.id is not None
        method, tool, version = message.method, message.tool, message.version
        pending = frame.session.settle(frame.direction.opposite, message.id)
        if method is None and pending is not None:
            method, tool = pending.method, pending.tool
        if version is None and pending is not None:
            version = frame.session.version or pending.version
        answer = answer_in_place(self.registry, refused_reply(rejection, frame.direction), message.id, method, version)
        return Message(ERROR_RESPONSE, message.id, method, version=version, tool=tool), answer

    def learn(self, frame: Frame, message: Message, tools: UpstreamTools) -> Frame:
        """What a passing frame settles: the client's capabilities, a cancellation, the upstream's
        tools (a ``tools/list`` result whose invalid tools enforce mode drops comes back as a new
        frame: the one case where the gateway changes a frame). The handshake's version is
        ``handshake``'s, taught by the reply valid or not."""
        kind, session = message.kind, frame.session
        if kind is NOTIFICATION:
            self._notified(frame, message, tools)
        elif kind is REQUEST and message.method == "initialize" and message.params is not None:
            capabilities = message.params.get("capabilities")
            # What the client can do (elicitation, for approvals); the version stays until the reply.
            session.negotiate(session.version, capabilities=capabilities if isinstance(capabilities, Mapping) else {})
        elif kind is RESPONSE and message.method == "tools/list" and message.document is not None:
            result = message.document.get("result")
            if isinstance(result, Mapping):
                return self._learn_tools(frame, message, result, tools)
        return frame

    def handshake(self, frame: Frame, message: Message, offered: str | None) -> None:
        """An ``initialize`` reply read as its request's answer, valid or refused (the ledger calls
        this as it settles the request): the session goes on at the version the server answered
        (``answered_version``), else at the one the client's request was read at (``offered``; not
        known, the session's own or the reply's), the server reported for naming a version no
        session can be held to. The lockfile learns the server's name. A refused reply's own
        violations are ``judge``'s, reported once (ADR 42)."""
        result = None if message.document is None else message.document.get("result")
        if not isinstance(result, Mapping):
            return  # an error: no handshake, nothing to learn
        version = answered_version(self.registry, result)
        if version is None:
            named = result.get("protocolVersion")
            rule = CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.slug
            if isinstance(named, str) and self.modes.rule_on(rule):  # (any other value: the schema's to name)
                errors = [{"path": "/result/protocolVersion", "msg": f"{named!r} is no handshake version bundled here"}]
                self.violation(rule, frame, message, errors, "reported")
            version = offered or frame.session.version or message.version
        frame.session.negotiate(version)
        self.report.negotiated(frame.session, version)
        if self.lock is not None:
            info = result.get("serverInfo")
            self.lock.resolve(info.get("name") if isinstance(info, Mapping) else None)

    def _notified(self, frame: Frame, message: Message, tools: UpstreamTools) -> None:
        """A peer cancels a request it sent (spec basic/utilities/cancellation): settled, not a
        violation, and its reply, should it still come, is late. The upstream's tools changed: a tool
        not listed may be new."""
        if message.method == "notifications/tools/list_changed" and frame.direction is SERVER_TO_CLIENT:
            tools.complete = False
            return
        params = message.params
        cancelled = params.get("requestId") if message.method == "notifications/cancelled" and params else None
        if not is_request_id(cancelled):
            return
        pending = frame.session.abandon(frame.direction, cancelled)
        frame.session.restore(frame.direction, cancelled)  # a renamed request's id is free again (ADR 43)
        if pending is not None:
            reason = "client_cancelled" if frame.direction is CLIENT_TO_SERVER else "upstream_cancelled"
            self.report.ended_unanswered(
                frame.session, frame.direction, cancelled, pending.method, reason, pending.tool
            )

    def _learn_tools(self, frame: Frame, message: Message, result: Mapping[str, Any], tools: UpstreamTools) -> Frame:
        listed = list(result.get("tools", []))
        outcome = tools.learn(listed)
        if self.listings_judged:  # (each tool's findings are its server's, in its section: ADR 39)
            return frame
        if self.modes.rule_on(TOOL_DEFINITION_CHANGED):
            for name, patch in outcome.changed:
                errors = patch_errors(patch)
                self._tool_event(TOOL_DEFINITION_CHANGED, frame, message, name, errors, "reported", patch)
        hidden = set() if self.lock is None else self._locked(frame, message, result, listed, outcome.fingerprints)
        if outcome.invalid and self.modes.rule_on(INVALID_TOOL_SCHEMA):
            for name, why in outcome.invalid:
                enforce = self.modes.mode_for(frame.direction, name) is Mode.ENFORCE
                action = "dropped" if enforce else "observed"
                self._tool_event(INVALID_TOOL_SCHEMA, frame, message, name, [{"path": "", "msg": why}], action)
                if enforce:
                    hidden.add(name)
        if not hidden:
            return frame
        # The client never sees a tool it could not check, nor one the lockfile does not allow.
        kept = [tool for tool in result["tools"] if not (isinstance(tool, Mapping) and tool.get("name") in hidden)]
        document = {**(message.document or {}), "result": {**result, "tools": kept}}
        raw = jsonio.dumps(document)
        return frame._replace(raw=raw)

    def _locked(
        self,
        frame: Frame,
        message: Message,
        result: Mapping[str, Any],
        listed: list[Any],
        fingerprints: Mapping[str, str],
    ) -> set[str]:
        """A page of the list held against the lockfile: each difference reported with its patch;
        the tools whose calls it does not allow, to hide (enforce mode)."""
        assert self.lock is not None
        hidden = set()
        last = not isinstance(result.get("nextCursor"), str)
        for finding in self.lock.listed(listed, last_page=last, fingerprints=fingerprints):
            if not self.modes.rule_on(finding.rule):
                continue
            hide = finding.rule != REMOVED and self.modes.mode_for(frame.direction, finding.tool) is Mode.ENFORCE
            errors = patch_errors(finding.patch, finding.was if finding.rule == RENAMED else None)
            action = "hidden" if hide else "reported" if finding.rule == REMOVED else "observed"
            self._tool_event(finding.rule, frame, message, finding.tool, errors, action, finding.patch)
            if hide:
                hidden.add(finding.tool)
        return hidden

    def _tool_event(
        self,
        rule: str,
        frame: Frame,
        message: Message,
        tool: str,
        errors: Any = (),
        action: str = "",
        patch: Any = None,
    ) -> None:
        event = self.report.violation(
            rule,
            direction=frame.direction,
            method="tools/list",
            tool=tool,
            request_id=message.id,
            errors=errors,
            action=action,
            patch=patch,
            session=frame.session,
        )
        self._emit(event)
