"""Human approval of held tool calls: each held call waits for an approver's decision or its deadline.

An approval is bound to the SHA-256 of the call's canonical arguments; a decision for other
arguments is refused. In memory, one book per server process; no I/O.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from .redaction import Redactor

if TYPE_CHECKING:
    from .policy import Policy

__all__ = ["ApprovalBook", "PendingApproval", "arguments_digest"]


def arguments_digest(arguments: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of the arguments: what an approval is bound to."""
    return jsonio.fingerprint(arguments if arguments is not None else {})


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    id: str
    tool: str
    session_id: str
    arguments_sha256: str
    arguments: Any  # redacted, for the approver to read
    expires_at: str
    deadline: float  # monotonic
    decision: asyncio.Future[bool] = field(compare=False)

    def to_document(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "session_id": self.session_id,
            "arguments_sha256": self.arguments_sha256,
            "arguments": self.arguments,
            "expires_at": self.expires_at,
        }


class ApprovalBook:
    """The calls held for approval. ``hold`` opens one; ``decide`` answers it; ``wait`` awaits it."""

    def __init__(self, *, deadline_seconds: float, redactor: Redactor, clock: Callable[[], float] = time.monotonic):
        self.deadline_seconds = deadline_seconds
        self.redactor = redactor
        self.clock = clock
        self._held: dict[str, PendingApproval] = {}

    @classmethod
    def of(cls, policy: Policy) -> ApprovalBook:
        """The book of calls ``policy`` holds: its deadline, its redaction of held arguments."""
        return cls(deadline_seconds=policy.approval_deadline_seconds, redactor=policy.redactor)

    def hold(self, tool: str, arguments: Any, session_id: str) -> PendingApproval:
        now = datetime.now(UTC)
        pending = PendingApproval(
            id=secrets.token_hex(8),
            tool=tool,
            session_id=session_id,
            arguments_sha256=arguments_digest(arguments),
            arguments=self.redactor.redact(arguments)[0],
            expires_at=(now + timedelta(seconds=self.deadline_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            deadline=self.clock() + self.deadline_seconds,
            decision=asyncio.get_running_loop().create_future(),
        )
        self._held[pending.id] = pending
        return pending

    def pending(self) -> list[PendingApproval]:
        return sorted(self._held.values(), key=lambda p: p.deadline)

    def decide(self, approval_id: str, *, allow: bool, arguments_sha256: str | None) -> PendingApproval:
        """Answer a held call. The approver names the arguments' digest it saw; another is refused."""
        pending = self._held.get(approval_id)
        if pending is None or pending.decision.done():
            raise Rejection(CanonicalError.APPROVAL_NOT_FOUND, [{"path": "/id", "msg": "approval_not_found"}])
        if allow and arguments_sha256 != pending.arguments_sha256:
            raise Rejection(
                CanonicalError.APPROVAL_MISMATCH,
                [{"path": "/arguments_sha256", "msg": "arguments_changed"}],
                extra={"policy_violation": True},
            )
        pending.decision.set_result(allow)
        return pending

    async def wait(self, pending: PendingApproval, *, also: asyncio.Future[bool] | None = None) -> None:
        """Until the approver (or ``also``, an elicitation's answer) decides, or the deadline passes.

        Returns when allowed; raises ``Rejection`` (APPROVAL_DENIED, APPROVAL_EXPIRED) otherwise.
        """
        waiting: set[asyncio.Future[Any]] = {pending.decision}
        if also is not None:
            waiting.add(also)
        try:
            remaining = max(0.0, pending.deadline - self.clock())
            done, _ = await asyncio.wait(waiting, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._held.pop(pending.id, None)
            if also is not None and not also.done():
                also.cancel()
        extra: Mapping[str, Any] = {"policy_violation": True, "approval_id": pending.id}
        if not done:
            raise Rejection(CanonicalError.APPROVAL_EXPIRED, [{"path": "", "msg": "approval_expired"}], extra=extra)
        allowed = any(not f.cancelled() and f.exception() is None and f.result() is True for f in done)
        if not allowed:
            raise Rejection(CanonicalError.APPROVAL_DENIED, [{"path": "", "msg": "approval_denied"}], extra=extra)
