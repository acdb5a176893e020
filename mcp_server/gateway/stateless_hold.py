"""A call the policy holds under the stateless protocol (2026-07-28): asked as an InputRequiredResult
whose ``requestState`` is a signed grant; carried out when the retry brings the grant back with the
user's yes, on whichever replica shares the key. Nothing waits in memory between the two requests.
A bridge's own rounds of an approved call (its state, under another prefix) are let through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import Message
from ..execution.approvals import arguments_digest
from ..execution.grants import GrantSigner
from ..execution.peer import approval_request, approved
from ..execution.policy import Policy

__all__ = ["BRIDGE_STATE", "INPUT_KEY", "admitted_params", "can_be_asked", "input_required"]

CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
INPUT_KEY = "mcp-server/approval"  # the gateway's key in ``inputRequests``/``inputResponses``
# The prefix of a bridge's ``requestState`` (gateway/bridge/to_stateful.py): an upstream's question
# within a call relayed already, sealed with the same key as grants, never read as one.
BRIDGE_STATE = "mcp-bridge.1."


def input_required(signer: GrantSigner, policy: Policy, message: Message) -> dict[str, Any]:
    """The result that asks the client's user to approve ``message``'s call: an elicitation to
    fulfil, and the grant (signed, valid for the policy's approval deadline) to send back with it."""
    assert message.tool is not None
    arguments = (message.params or {}).get("arguments", {})
    grant, token = signer.issue(message.tool, arguments, policy.version, policy.approval_deadline_seconds)
    shown = policy.redactor.redact(arguments)[0]
    question = {"method": "elicitation/create", "params": approval_request(message.tool, shown, grant.arguments_sha256)}
    return {"resultType": "input_required", "inputRequests": {INPUT_KEY: question}, "requestState": token}


def admitted_params(signer: GrantSigner, policy: Policy, message: Message) -> dict[str, Any] | None:
    """The retried call's params to relay (the grant and the user's answer taken out), when it brings
    a grant of ours; ``None`` when it brings none (the user is to be asked). A grant that is not
    this call's, is stale or expired, or an answer that is not yes: ``Rejection``."""
    params: Mapping[str, Any] = message.params or {}
    token = params.get("requestState")
    if not GrantSigner.is_grant(token):
        return dict(params) if _continues(signer, message) else None
    assert message.tool is not None and isinstance(token, str)
    signer.verify(token, message.tool, params.get("arguments", {}), policy.version)
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
    return relayed


def _continues(signer: GrantSigner, message: Message) -> bool:
    """Whether the retry brings a bridge's state of this very call (tool and arguments), sealed with
    this key: the bridge issues one only for a call it relayed, so approved already; it answers the
    upstream's question and starts no new call."""
    params: Mapping[str, Any] = message.params or {}
    claims = signer.unseal(params.get("requestState"), BRIDGE_STATE)
    return (
        claims is not None
        and claims.get("tool") == message.tool
        and claims.get("arguments_sha256") == arguments_digest(params.get("arguments", {}))
    )


def can_be_asked(message: Message) -> bool:
    """Whether a stateless request's client declared, on the request itself, that it can be asked."""
    meta = (message.params or {}).get("_meta")
    declared = meta.get(CAPABILITIES_META) if isinstance(meta, Mapping) else None
    return isinstance(declared, Mapping) and "elicitation" in declared
