"""A call the policy holds under the stateless protocol (2026-07-28): asked as an InputRequiredResult
whose ``requestState`` is a signed grant; carried out when the retry brings the grant back with the
user's yes, on whichever replica shares the key. Nothing waits in memory between the two requests.
An approved call's later rounds with its upstream come back under a continuation grant: asked once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..core.errors import CanonicalError, Rejection
from ..core.types import Message
from ..execution.grants import GrantSigner
from ..execution.peer import approval_request, approved
from ..execution.policy import Policy
from ..registry.versions import CLIENT_CAPABILITIES_META

__all__ = ["INPUT_KEY", "Admitted", "admitted_params", "can_be_asked", "continued", "input_required"]

INPUT_KEY = "mcp-server/approval"  # the gateway's key in ``inputRequests``/``inputResponses``


def input_required(signer: GrantSigner, policy: Policy, message: Message) -> dict[str, Any]:
    """The result that asks the client's user to approve ``message``'s call: an elicitation to
    fulfil, and the grant (signed, valid for the policy's approval deadline) to send back with it."""
    assert message.tool is not None
    arguments = (message.params or {}).get("arguments", {})
    grant, token = signer.issue(message.tool, arguments, policy.version, policy.approval_deadline_seconds)
    shown = policy.redactor.redact(arguments)[0]
    question = {"method": "elicitation/create", "params": approval_request(message.tool, shown, grant.arguments_sha256)}
    return {"resultType": "input_required", "inputRequests": {INPUT_KEY: question}, "requestState": token}


class Admitted(NamedTuple):
    """A retried held call let through: the params to relay, and whether the user's yes decided it
    now (a continuation round was decided at its first round: no second audit event)."""

    params: dict[str, Any]
    decided: bool


def admitted_params(signer: GrantSigner, policy: Policy, message: Message) -> Admitted | None:
    """The retried call's params to relay (the grant and the user's answer taken out), when it brings
    a grant of ours; ``None`` when it brings none (the user is to be asked). A grant that is not
    this call's, is stale or expired, or an answer that is not yes: ``Rejection``."""
    params: Mapping[str, Any] = message.params or {}
    token = params.get("requestState")
    if not GrantSigner.is_grant(token):
        return None
    assert message.tool is not None and isinstance(token, str)
    grant = signer.verify(token, message.tool, params.get("arguments", {}), policy.version)
    if grant.continuation:  # approved already: the upstream's next round, with its own state back
        relayed = {key: value for key, value in params.items() if key != "requestState"}
        if grant.carried is not None:
            relayed["requestState"] = grant.carried
        return Admitted(relayed, decided=False)
    responses = params.get("inputResponses")
    answer = responses.get(INPUT_KEY) if isinstance(responses, Mapping) else None
    if not approved(answer if isinstance(answer, Mapping) else None):
        raise Rejection(
            CanonicalError.APPROVAL_DENIED,
            [{"path": f"/params/inputResponses/{INPUT_KEY}", "msg": "approval_denied"}],
            extra={"policy_violation": True},
        )
    relayed = {key: value for key, value in params.items() if key not in ("requestState", "inputResponses")}
    others = {key: value for key, value in (responses or {}).items() if key != INPUT_KEY}
    if others:
        relayed["inputResponses"] = others
    return Admitted(relayed, decided=True)


def continued(
    signer: GrantSigner, policy: Policy, tool: str, arguments: Any, result: Mapping[str, Any]
) -> dict[str, Any]:
    """An approved call's upstream asks for more input (an InputRequiredResult): its state wrapped in
    a continuation grant, so that the retry is not held again (and asked again, round after round)."""
    state = result.get("requestState")
    carried = state if isinstance(state, str) else None
    ttl = policy.approval_deadline_seconds
    token = signer.issue(tool, arguments, policy.version, ttl, carried=carried, continuation=True)[1]
    return {**result, "requestState": token}


def can_be_asked(message: Message) -> bool:
    """Whether a stateless request's client declared, on the request itself, that it can be asked."""
    meta = (message.params or {}).get("_meta")
    declared = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, Mapping) else None
    return isinstance(declared, Mapping) and "elicitation" in declared
