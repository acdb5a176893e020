"""Calls the policy holds for its user's approval: how a call is held (a pure decision), and the
holding, by an elicitation to the client (awaited) or, under the stateless protocol, by a signed grant
the client's retry brings back (``stateless_hold.py``). The session relays; this decides and waits.
"""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Any

from ..chain.policy_check import needs_approval
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, Frame, Message, Reply, RequestId
from ..execution.approvals import ApprovalBook
from ..execution.grants import GrantSigner
from ..execution.peer import PeerChannel
from ..execution.policy import Policy
from ..execution.single_use import SingleUse
from ..ledger.verdicts import Verdicts, answer_in_place
from ..observe.events import EventLog
from .stateless_hold import admitted_params, continued, input_required

__all__ = ["HeldCalls", "Hold", "hold_of"]


class Hold(Enum):
    """How a client's request is held before it goes upstream."""

    NONE = "none"  # not held: it goes at once
    BY_GRANT = "by_grant"  # the stateless protocol: the question is its answer, the retry brings the yes
    IN_LINE = "in_line"  # asked by elicitation, what the client sends next waits (NDJSON: answers in order)
    BESIDE = "beside"  # asked by elicitation on the call's own stream, the rest goes on (HTTP)


def hold_of(policy: Policy | None, message: Message, *, stateless: bool, ordered: bool) -> Hold:
    """How the request ``message`` is held: not at all unless the policy asks its user to approve it;
    by a grant under the stateless protocol; else by asking its client, in line or beside. Pure."""
    if policy is None or message.method is None or not needs_approval(policy, message.method, message.tool):
        return Hold.NONE
    if stateless:
        return Hold.BY_GRANT
    return Hold.IN_LINE if ordered else Hold.BESIDE


class HeldCalls:
    """One session's held calls: the approvals waited for, the askers in flight, and the stateless
    calls approved while they are upstream (an upstream round answering one gets a continuation grant)."""

    def __init__(
        self,
        session: Session,
        verdicts: Verdicts,
        policy: Policy | None,
        *,
        grants: GrantSigner | None,
        single_use: SingleUse | None,
        events: EventLog | None,
        transport: str,
    ) -> None:
        self.session, self.verdicts, self.policy = session, verdicts, policy
        self.grants, self.single_use, self.events, self.transport = grants, single_use, events, transport
        self.approvals = None if policy is None else ApprovalBook.of(policy)
        self.askers: set[PeerChannel] = set()
        # Approved stateless held calls in flight (id → tool, arguments). Nothing between requests.
        self.approved: dict[RequestId, tuple[str, Any]] = {}

    async def admitted(self, frame: Frame, message: Message) -> tuple[Frame, Message] | Reply:
        """A held call of the stateless protocol: the frame to relay and what it is (its grant verified,
        spent and taken out), or the answer: the question (a fresh grant with it) or the refusal."""
        policy, grants = self.policy, self.grants
        assert policy is not None and grants is not None and message.id is not None
        try:
            admitted = admitted_params(grants, policy, message)
            if admitted is not None and self.single_use is not None:
                await self._spend_everywhere(grants, message)
        except Rejection as refusal:
            self.verdicts.violation(refusal.error.slug, frame, message)
            self._decided(message, "denied", refusal)
            return answer_in_place(self.verdicts.registry, refusal, message.id, message.method, message.version)
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

    async def _spend_everywhere(self, grants: GrantSigner, message: Message) -> None:
        """A grant verified (and spent on this replica) is spent in the store the replicas share: a
        retry another replica carried out already is refused (issue 30: one approval runs once)."""
        assert self.single_use is not None
        grant = grants.open(str((message.params or {}).get("requestState")))
        if not await self.single_use.claim("approval:" + grant.id, grant.expires):
            raise Rejection(
                CanonicalError.APPROVAL_NOT_FOUND,
                [{"path": "/params/requestState", "msg": "approval_used"}],
                extra={"policy_violation": True},
            )

    async def approve(self, message: Message, asker: PeerChannel) -> Reply | None:
        """Hold a ``tools/call`` until its client's user approves it (asked by ``asker``, an elicitation
        request) or the deadline passes: ``None`` when approved, else the refusal to answer with."""
        assert self.approvals is not None and message.tool is not None and message.id is not None
        arguments = (message.params or {}).get("arguments", {})
        held = self.approvals.hold(message.tool, arguments, self.session.id)
        self._decided(message, "held")
        self.askers.add(asker)
        asked = asyncio.ensure_future(
            asker.elicit_approval(self.session)(message.tool, held.arguments, held.arguments_sha256)
        )
        try:
            await self.approvals.wait(held, also=asked)
        except Rejection as refusal:
            self.session.settle(CLIENT_TO_SERVER, message.id)
            no_frame = Frame(b"", self.transport, self.session, 0, CLIENT_TO_SERVER)  # the refusal is the gateway's
            self.verdicts.violation(refusal.error.slug, no_frame, message)
            self._decided(message, "denied", refusal)
            return answer_in_place(self.verdicts.registry, refusal, message.id, message.method, message.version)
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

    def answers_asker(self, message: Message) -> bool:
        """A client's reply to an approval's elicitation: delivered to its asker, it goes no further."""
        if message.id is None or not self.askers:
            return False
        document = message.document if message.document is not None else {}
        return any(asker.deliver(message.id, document) for asker in list(self.askers))

    def continued(self, frame: Frame, message: Message) -> Frame:
        """The upstream's answer to an approved held call: when it asks for more input, its state goes
        back inside a continuation grant (the retry is not asked to approve again)."""
        if message.id not in self.approved:
            return frame
        assert message.id is not None and self.policy is not None and self.grants is not None
        tool, arguments = self.approved.pop(message.id)
        result = (message.document or {}).get("result")
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            return frame
        wrapped = continued(self.grants, self.policy, tool, arguments, result)
        return frame._replace(raw=jsonio.dumps({**(message.document or {}), "result": wrapped}))

    def forget(self, request_id: RequestId) -> None:
        """A call cancelled or past its time: no continuation for it."""
        self.approved.pop(request_id, None)

    def close(self) -> None:
        """The session ends: every question still out is withdrawn."""
        for asker in list(self.askers):
            asker.close()
