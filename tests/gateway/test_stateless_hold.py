"""A stateless held call (issue 21): the question a gateway asks by its result, and what the retry
that answers it relays. The policy and the signer are real; no process is needed."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.types import REQUEST, Message
from mcp_server.execution.grants import MIN_KEY_BYTES, GrantSigner
from mcp_server.execution.policy import Policy
from mcp_server.gateway.stateless_hold import INPUT_KEY, Admitted, admitted_params, continued, input_required

POLICY = Policy.from_document({"tool": [{"match": "echo", "approval": True}], "redaction": {"keys": ["pin"]}})
SIGNER = GrantSigner(b"s" * MIN_KEY_BYTES, shared=True)
ARGUMENTS = {"text": "hi", "pin": "1234"}


def call(params: dict[str, Any]) -> Message:
    return Message(REQUEST, 1, "tools/call", {"name": "echo", **params}, "2026-07-28", tool="echo")


def test_the_question_shows_redacted_arguments_and_carries_a_grant() -> None:
    """Issue 21 / MCP 2026-07-28 (InputRequiredResult): an elicitation the user answers, and a grant."""
    result = input_required(SIGNER, POLICY, call({"arguments": ARGUMENTS}))
    assert result["resultType"] == "input_required"
    question = result["inputRequests"][INPUT_KEY]
    assert question["method"] == "elicitation/create"
    assert "1234" not in question["params"]["message"]
    assert SIGNER.open(result["requestState"]).tool == "echo"


def test_a_retry_with_the_users_yes_is_relayed_without_the_grant_and_keeps_other_answers() -> None:
    """Issue 21: the upstream never sees the gateway's state or answer; other answers pass on."""
    token = input_required(SIGNER, POLICY, call({"arguments": ARGUMENTS}))["requestState"]
    responses = {INPUT_KEY: {"action": "accept", "content": {"approve": True}}, "theirs": {"action": "decline"}}
    params = {"arguments": ARGUMENTS, "requestState": token, "inputResponses": responses, "_meta": {"k": 1}}
    relayed = {
        "name": "echo",
        "arguments": ARGUMENTS,
        "_meta": {"k": 1},
        "inputResponses": {"theirs": {"action": "decline"}},
    }
    assert admitted_params(SIGNER, POLICY, call(params)) == Admitted(relayed, decided=True)


def test_a_call_without_a_grant_of_ours_is_asked_and_a_no_is_refused() -> None:
    """Issue 21: no grant (or an upstream's own state) means the user is asked; a no is APPROVAL_DENIED."""
    assert admitted_params(SIGNER, POLICY, call({"arguments": ARGUMENTS})) is None
    assert admitted_params(SIGNER, POLICY, call({"arguments": ARGUMENTS, "requestState": "round-1"})) is None
    token = input_required(SIGNER, POLICY, call({"arguments": ARGUMENTS}))["requestState"]
    for answer in ({"action": "decline"}, {"action": "accept", "content": {"approve": False}}, None):
        responses = {} if answer is None else {INPUT_KEY: answer}
        retry = call({"arguments": ARGUMENTS, "requestState": token, "inputResponses": responses})
        with pytest.raises(Rejection) as refused:
            admitted_params(GrantSigner(b"s" * MIN_KEY_BYTES, shared=True), POLICY, retry)
        assert refused.value.error is CanonicalError.APPROVAL_DENIED


def test_an_approved_calls_next_round_with_its_upstream_is_let_through_with_the_upstreams_state() -> None:
    """Issue 22: the upstream's InputRequiredResult to an approved call goes back with a continuation
    grant; the retry carrying it is not asked again and brings the upstream its own state."""
    upstream_round = {"resultType": "input_required", "inputRequests": {"q": {}}, "requestState": "theirs-1"}
    wrapped = continued(SIGNER, POLICY, "echo", ARGUMENTS, upstream_round)
    assert wrapped["inputRequests"] == {"q": {}} and GrantSigner.is_grant(wrapped["requestState"])
    answers = {"q": {"action": "accept", "content": {"name": "Ada"}}}
    retry = call({"arguments": ARGUMENTS, "requestState": wrapped["requestState"], "inputResponses": answers})
    relayed = {"name": "echo", "arguments": ARGUMENTS, "requestState": "theirs-1", "inputResponses": answers}
    assert admitted_params(SIGNER, POLICY, retry) == Admitted(relayed, decided=False)
    other = continued(SIGNER, POLICY, "echo", ARGUMENTS, upstream_round)["requestState"]
    with pytest.raises(Rejection) as refused:
        admitted_params(SIGNER, POLICY, call({"arguments": {"text": "other"}, "requestState": other}))
    assert refused.value.error is CanonicalError.APPROVAL_MISMATCH
