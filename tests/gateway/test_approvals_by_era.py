"""A held call's approval in both eras through one gateway (issue 22): a client of the stateful
versions is asked by an elicitation on its session, a 2026-07-28 client by an InputRequiredResult
whose signed requestState binds the call; both are one decision of the policy and one audit event.
The official SDK client, the SDK upstream (tests/upstreams/sdk_server.py), the HTTP front.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from .gateways import SDK_UPSTREAM, STATELESS_HEADERS, body_of, http_gateway, stateless_call

WAIT = 60.0
KEY = "k" * 32


def _policy(tmp_path: Path, deadline_seconds: float = 300.0) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(f'[approval]\ndeadline_seconds = {deadline_seconds}\n\n[[tool]]\nmatch = "echo"\napproval = true\n')
    return str(path)


def _error(exc: MCPError) -> CanonicalError:
    return next(member for member in CanonicalError if member.mcp_code == exc.error.code)


async def _call(url: str, mode: str, answer: dict[str, Any], text: str) -> str | CanonicalError:
    """``echo(text)`` by the official client in ``mode``, its user answering the approval ``answer``;
    the echoed text, or the catalogued refusal."""

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(**answer)

    async with Client(url, mode=mode, read_timeout_seconds=WAIT, elicitation_callback=approve) as client:
        try:
            result = await client.call_tool("echo", {"text": text})
        except MCPError as refused:
            return _error(refused)
        return str(result.content[0].text)


def _policy_events(runs: Path) -> list[dict[str, Any]]:
    lines = (runs / "mcp_server" / "gateway" / ".latest").read_text().splitlines()
    return [event for event in map(json.loads, lines) if event["event"] == "policy"]


YES = {"action": "accept", "content": {"approve": True}}
NO = {"action": "accept", "content": {"approve": False}}
NOT_THE_QUESTION = {"action": "accept", "content": {"approve": "yes"}}  # not the boolean asked for


def test_both_eras_are_asked_and_their_answers_decide_alike_with_one_audit_event(tmp_path: Path) -> None:
    """Issue 22: the same policy rule holds the call of a 2025-11-25 client (elicitation) and of a
    2026-07-28 client (InputRequiredResult); a yes carries it out, a no or an answer that is not the
    approval asked for refuses it with APPROVAL_DENIED; the audit events of both are the same."""
    key = {"MCP_APPROVAL_KEY": KEY}
    with http_gateway(tmp_path, "--policy", _policy(tmp_path), upstream=SDK_UPSTREAM, env=key) as gw:

        async def both_eras() -> list[str | CanonicalError]:
            return [
                await _call(gw.url, mode, answer, f"{mode}")
                for mode in ("legacy", "2026-07-28")
                for answer in (YES, NO, NOT_THE_QUESTION)
            ]

        outcomes = asyncio.run(asyncio.wait_for(both_eras(), WAIT))
        denied = CanonicalError.APPROVAL_DENIED
        assert outcomes == ["legacy", denied, denied, "2026-07-28", denied, denied]
    events = _policy_events(tmp_path / "runs")
    # The 2026-07-28 calls came last, all in the one shared stateless session; each legacy client had its own.
    shared = events[-1]["session_id"]
    stateful = [(e["status"], frozenset(e)) for e in events if e["session_id"] != shared]
    stateless = [(e["status"], frozenset(e)) for e in events if e["session_id"] == shared]
    assert [status for status, _ in stateful] == ["held", "allowed", "held", "denied", "held", "denied"]
    assert [status for status, _ in stateless] == [status for status, _ in stateful]
    assert {keys for _, keys in stateful} == {keys for _, keys in stateless}


def test_a_stateful_approval_not_given_before_the_deadline_is_refused_as_expired(tmp_path: Path) -> None:
    """Issue 22 / issue 6: the stateful client's user never answers: APPROVAL_EXPIRED at the deadline."""
    with http_gateway(tmp_path, "--policy", _policy(tmp_path, 1.0), upstream=SDK_UPSTREAM) as gw:

        async def unanswered() -> CanonicalError:
            answered = asyncio.Event()

            async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
                await answered.wait()  # released once the call is refused
                return types.ElicitResult(**YES)

            async with Client(gw.url, mode="legacy", read_timeout_seconds=WAIT, elicitation_callback=never) as client:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("echo", {"text": "too late"})
                answered.set()
                return _error(refused.value)

        assert asyncio.run(asyncio.wait_for(unanswered(), WAIT)) is CanonicalError.APPROVAL_EXPIRED


def _expiry(token: str) -> int:
    """The expiry (epoch seconds) a grant states: its payload is readable, only its signature is secret."""
    payload = token.removeprefix("mcp-approval.1.").rpartition(".")[0]
    return int(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["expires"])


def test_a_stateless_grant_tampered_with_or_expired_is_refused(tmp_path: Path) -> None:
    """Issue 22: the retry of a 2026-07-28 held call with its grant altered, with other arguments,
    or after the grant's expiry is refused with the catalogue's errors; nothing reaches the upstream."""
    with (
        http_gateway(tmp_path, "--policy", _policy(tmp_path, 1.0), upstream=SDK_UPSTREAM) as gw,
        httpx.Client(timeout=WAIT) as raw,
    ):

        def post(arguments: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
            return body_of(raw.post(gw.url, json=stateless_call(arguments, extra), headers=STATELESS_HEADERS))

        asked = post({"text": "held"})["result"]
        [key] = asked["inputRequests"]
        token = asked["requestState"]
        yes = {key: YES}
        flipped = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
        tampered = post({"text": "held"}, {"requestState": flipped, "inputResponses": yes})
        changed = post({"text": "other"}, {"requestState": token, "inputResponses": yes})
        while time.time() <= _expiry(token):  # the grant's own clock, not a guess
            time.sleep(0.05)
        expired = post({"text": "held"}, {"requestState": token, "inputResponses": yes})
    assert [_code(answer) for answer in (tampered, changed, expired)] == [
        CanonicalError.APPROVAL_NOT_FOUND,
        CanonicalError.APPROVAL_MISMATCH,
        CanonicalError.APPROVAL_EXPIRED,
    ]


def _code(answer: dict[str, Any]) -> CanonicalError:
    return next(member for member in CanonicalError if member.mcp_code == answer["error"]["code"])


def test_a_held_call_whose_upstream_asks_for_more_input_is_approved_once_not_every_round(tmp_path: Path) -> None:
    """Issue 22: a 2026-07-28 upstream answering an approved call with InputRequiredResult rounds gets
    its own state back through a continuation grant: the user approves once, answers the upstream's
    two questions, and the call completes (before: asked again each round, the upstream's state lost)."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[[tool]]\nmatch = "test_input_required_result_multi_round"\napproval = true\n')
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if "Approve" in params.message:
            return types.ElicitResult(**YES)
        return types.ElicitResult(action="accept", content={"name": "Ada", "color": "green"})

    async def call(url: str) -> str:
        async with Client(url, mode="2026-07-28", read_timeout_seconds=WAIT, elicitation_callback=answer) as client:
            result = await client.call_tool("test_input_required_result_multi_round", {})
            return str(result.content[0].text)

    with http_gateway(tmp_path, "--policy", str(policy), env={"MCP_APPROVAL_KEY": KEY}) as gw:
        assert asyncio.run(asyncio.wait_for(call(gw.url), WAIT)) == "Multi-round complete"
    assert [question.split()[0] for question in asked] == ["Approve", "Step", "Step"]
