"""The execution boundary: policy, approval and timeout around every tool run, and its records.

One gate for `serve`'s tool calls and ``POST /execute``. Records go to a sink (default: one
redacted JSON line on the ``mcp_server.execution`` logger); no payload is ever written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from inspect import isawaitable
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from .approvals import ApprovalBook
from .policy import Policy
from .redaction import Redactor

__all__ = [
    "Elicit",
    "ExecutionGate",
    "ExecutionRecord",
    "RecordSink",
    "Trace",
    "log_sink",
]

log = logging.getLogger("mcp_server.execution.gate")


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Who asked: the session, and the caller's trace of its own steps (``POST /execute``'s ``trace``)."""

    session_id: str
    trace_id: str | None = None
    agent_step: int | str | None = None
    attempt: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionRecord:
    """One outbound tool execution, as the boundary's log (and later the event log) sees it."""

    timestamp: str
    session_id: str
    trace_id: str | None
    tool_id: str
    endpoint: str
    domain: str
    method: str
    agent_step: int | str | None
    attempt: int | None
    status_code: int | None
    latency_ms: float
    error_class: str | None
    redaction_applied: bool

    @classmethod
    def of(
        cls,
        trace: Trace,
        tool_id: str,
        *,
        latency_ms: float,
        error_class: str | None,
        endpoint: str = "",
        domain: str = "",
        method: str = "",
        status_code: int | None = None,
        redaction_applied: bool = False,
    ) -> ExecutionRecord:
        """A run of ``tool_id`` for ``trace``'s caller, stamped now (no endpoint: it never went out)."""
        return cls(
            timestamp=_now_stamp(),
            session_id=trace.session_id,
            trace_id=trace.trace_id,
            tool_id=tool_id,
            endpoint=endpoint,
            domain=domain,
            method=method,
            agent_step=trace.agent_step,
            attempt=trace.attempt,
            status_code=status_code,
            latency_ms=latency_ms,
            error_class=error_class,
            redaction_applied=redaction_applied,
        )

    def to_document(self) -> dict[str, Any]:
        return asdict(self)


RecordSink = Callable[[ExecutionRecord], None]
"""Where execution records go; the event log plugs in here."""

Elicit = Callable[[str, Mapping[str, Any], str], Awaitable[bool]]
"""Ask the MCP client's user to approve ``(tool, redacted arguments, digest)``; True when approved."""


def _now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_sink(emit: Callable[..., None]) -> RecordSink:
    """The run's event log as the sink (its ``emit``): one ``execution`` event per record (the log redacts)."""

    def sink(record: ExecutionRecord) -> None:
        emit(
            "execution",
            transport="http",
            route=record.endpoint,
            tool_id=record.tool_id,
            status="ok" if record.error_class is None else "error",
            duration_ms=record.latency_ms,
            trace_id=record.trace_id,
            agent_step=record.agent_step,
            attempt=record.attempt,
            redaction_applied=record.redaction_applied,
            endpoint=record.endpoint,
            domain=record.domain,
            http_method=record.method,
            status_code=record.status_code,
            latency_ms=record.latency_ms,
            error_class=record.error_class,
            session_id=record.session_id,
        )

    return sink


def log_sink(redactor: Redactor) -> RecordSink:
    """The default sink: the record, redacted once more, as one JSON line."""

    def sink(record: ExecutionRecord) -> None:
        document, applied = redactor.redact_record(record.to_document())
        document["redaction_applied"] = bool(document["redaction_applied"]) or applied
        log.info("%s", jsonio.dumps(document).decode())

    return sink


class ExecutionGate:
    """Runs one tool call under the policy: allowed, approved when the policy says so, in time."""

    def __init__(self, policy: Policy, approvals: ApprovalBook) -> None:
        self.policy = policy
        self.approvals = approvals
        # Where each policy decision on a call is told (the event log's ``policy`` events).
        self.decisions: Callable[..., None] | None = None
        self._plain: dict[tuple[str, bool], bool] = {}  # (tool, checked) → nothing for the gate to do

    def has_nothing_to_do(self, tool: str, *, checked: bool) -> bool:
        """Whether a call of ``tool`` needs nothing of the gate: allowed (by the chain's policy stage
        when ``checked``, else by the policy without a look at its arguments), no approval, no limit on
        its result, no sanitising. A plain function run so is not timed: a timeout interrupts only a
        tool that waits, and such a tool always goes through ``run``."""
        plain = self._plain.get((tool, checked))
        if plain is None:
            policy = self.policy
            rule = policy.rule_for(tool)
            allowed = checked or (policy.tool_denial(tool) is None and rule.max_argument_bytes is None)
            plain = allowed and not (
                rule.approval
                or rule.max_result_bytes is not None
                or "server_to_client" in policy.max_bytes
                or policy.sanitise_results
            )
            self._plain[(tool, checked)] = plain
        return plain

    def _decided(self, tool: str, trace: Trace, status: str, rejection: Rejection | None = None) -> None:
        if self.decisions is None:
            return
        if rejection is not None:
            rejection.decision_logged = True  # the frame this refuses does not tell it again
        self.decisions(
            tool_id=tool,
            status=status,
            policy_violation=status == "denied",
            error=None if rejection is None else rejection.summary(),
            agent_step=trace.agent_step,
            attempt=trace.attempt,
            session_id=trace.session_id,
        )

    async def run(
        self,
        tool: str,
        arguments: Any,
        trace: Trace,
        call: Callable[[], dict[str, Any] | Awaitable[dict[str, Any]]],
        *,
        approval: bool = False,
        timeout_seconds: float | None = None,
        elicit: Elicit | None = None,
        checked: bool = False,
    ) -> dict[str, Any]:
        """The tool's result, or ``Rejection`` (policy, approval, TOOL_TIMEOUT, or the tool's own).

        ``checked``: the chain's policy stage has already allowed the call and measured its
        arguments against this gate's policy (``serve``), so that is not done again here."""
        policy = self.policy
        rule = policy.rule_for(tool)
        if not checked:
            limit = rule.max_argument_bytes
            try:
                policy.check_call(tool, len(jsonio.dumps(arguments)) if limit is not None else 0)
            except Rejection as denied:
                self._decided(tool, trace, "denied", denied)
                raise
        if rule.approval or approval:
            pending = self.approvals.hold(tool, arguments, trace.session_id)
            self._decided(tool, trace, "held")
            asked: asyncio.Future[bool] | None = None
            if elicit is not None and policy.approval_by_elicitation:
                asked = asyncio.ensure_future(elicit(tool, pending.arguments, pending.arguments_sha256))
            try:
                await self.approvals.wait(pending, also=asked)
            except Rejection as refused:
                self._decided(tool, trace, "denied", refused)
                raise
            self._decided(tool, trace, "allowed")
        timeout = rule.timeout_seconds if timeout_seconds is None else min(timeout_seconds, rule.timeout_seconds)
        outcome = call()
        if isawaitable(outcome):  # a plain function's result is there already: no timer to set
            try:
                async with asyncio.timeout(timeout):  # no task of its own: a timer on this one
                    outcome = await outcome
            except TimeoutError:
                raise Rejection(
                    CanonicalError.TOOL_TIMEOUT,
                    [{"path": "", "msg": "tool_timeout"}],
                    extra={"retryable": True, "timeout_seconds": timeout},
                ) from None
        result: dict[str, Any] = outcome
        if rule.max_result_bytes is not None or "server_to_client" in policy.max_bytes:
            size = len(jsonio.dumps(result))
            policy.check_result(tool, size)
            policy.check_size("server_to_client", size)  # the result is most of the reply to the client
        if policy.sanitise_results:
            result = policy.redactor.redact(result)[0]
        return result


class Stopwatch:
    """Milliseconds since creation, for a record's ``latency_ms``."""

    __slots__ = ("began",)

    def __init__(self) -> None:
        self.began = time.perf_counter()

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.began) * 1000.0, 3)
