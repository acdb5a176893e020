"""How the gateway holds a call the policy wants approved: one pure decision (issue 32)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_server.core.types import NOTIFICATION, REQUEST, Message
from mcp_server.execution.policy import Policy
from mcp_server.gateway.held import Hold, hold_of

POLICY = Policy.from_document({"tool": [{"match": "delete_*", "approval": True}]})


def _call(tool: str, method: str = "tools/call", kind: Any = REQUEST) -> Message:
    return Message(kind, 1, method, {"name": tool}, "2025-11-25", tool)


@pytest.mark.parametrize(
    ("stateless", "ordered", "hold"),
    [
        (True, True, Hold.BY_GRANT),
        (True, False, Hold.BY_GRANT),
        (False, True, Hold.IN_LINE),
        (False, False, Hold.BESIDE),
    ],
)
def test_a_call_the_policy_holds_is_held_by_grant_in_line_or_beside(stateless: bool, ordered: bool, hold: Hold) -> None:
    """ADR 23 and issue 32: a stateless call by a grant; else asked of its client, in line on NDJSON
    (answers in order), beside it over HTTP (the call's own stream)."""
    assert hold_of(POLICY, _call("delete_all"), stateless=stateless, ordered=ordered) is hold


def test_a_call_no_rule_holds_and_a_session_without_policy_are_not_held() -> None:
    """Issue 6: only a tool rule with `approval` holds a call; without a policy nothing is held."""
    assert hold_of(POLICY, _call("read_file"), stateless=False, ordered=True) is Hold.NONE
    assert hold_of(None, _call("delete_all"), stateless=False, ordered=True) is Hold.NONE
    assert hold_of(POLICY, _call("delete_all", "tools/list"), stateless=True, ordered=True) is Hold.NONE
    notice = Message(NOTIFICATION, None, "notifications/progress", {}, "2025-11-25")
    assert hold_of(POLICY, notice, stateless=False, ordered=False) is Hold.NONE
