"""The policy engine's pure core and its chain stage, without an event loop (issue 6)."""

from __future__ import annotations

import asyncio
import fnmatch
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mcp_server.chain.policy_check import PolicyCheck
from mcp_server.chain.stage import Inspection
from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.session import Session
from mcp_server.core.settings import Settings, SetupError
from mcp_server.core.types import CLIENT_TO_SERVER, Direction, Frame, Message, MessageKind
from mcp_server.execution.policy import DEFAULT_TIMEOUT_SECONDS, Globs, Policy, load_policy
from mcp_server.registry.schemas import SchemaRegistry
from mcp_server.serve.app import build_server
from mcp_server.serve.tools import ToolSet

from ..conftest import exchange, initialize_frame

DOCUMENT: dict[str, Any] = {
    "methods": {"deny": ["sampling/*"]},
    "tools": {"allow": ["read_*", "echo"], "deny": ["read_secret*"]},
    "outbound": {"domains": ["*.example.test", "127.0.0.1"], "methods": ["GET", "POST"]},
    "limits": {"client_to_server_bytes": 300},
    "default_timeout_seconds": 10,
    "tool": [
        {"match": "read_big", "max_argument_bytes": 20, "max_result_bytes": 30, "timeout_seconds": 1},
        {"match": "read_*", "approval": True},
    ],
}


def frame(
    method: str, params: dict[str, Any] | None = None, *, direction: Direction = Direction.CLIENT_TO_SERVER
) -> Inspection:
    """A classified request on the diagnostic path, as the policy stage meets it."""
    document = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    raw = jsonio.dumps(document)
    inspection = Inspection(Frame(raw=raw, transport="test", session=Session(), direction=direction))
    inspection.document = document
    inspection.message = Message(kind=MessageKind.REQUEST, id=1, method=method, params=params, document=document)
    return inspection


def reason_of(check: Any, item: Inspection) -> str | None:
    try:
        check(item)
    except Rejection as rejection:
        assert rejection.error is CanonicalError.POLICY_DENIED and rejection.extra["policy_violation"] is True
        assert rejection.message is item.message  # the boundary answers with the request's id
        return str(rejection.errors[0]["msg"])
    return None


def test_deny_wins_over_allow_and_an_absent_allow_list_allows_everything() -> None:
    """Issue 6: method and tool allow/deny lists by glob."""
    policy = Policy.from_document(DOCUMENT)
    assert policy.method_denial("sampling/createMessage") == "method_denied"
    assert policy.method_denial("tools/call") is None
    assert policy.tool_denial("read_file") is None
    assert policy.tool_denial("read_secret_key") == "tool_denied"
    assert policy.tool_denial("write_file") == "tool_not_allowed"
    assert Policy().tool_denial("anything") is None and Policy().method_denial("anything") is None


def test_the_stage_refuses_by_method_tool_size_and_argument_size() -> None:
    """Issue 6: the policy stage, after classify and before the schema check."""
    check = PolicyCheck(Policy.from_document(DOCUMENT), CLIENT_TO_SERVER, tool_methods=frozenset({"read_file"})).inspect
    assert reason_of(check, frame("sampling/createMessage", direction=Direction.SERVER_TO_CLIENT)) == "method_denied"
    assert reason_of(check, frame("tools/call", {"name": "write_file"})) == "tool_not_allowed"
    assert reason_of(check, frame("tools/call", {"name": "read_big", "arguments": {"x": "y" * 30}})) == (
        "arguments_too_large"
    )
    assert reason_of(check, frame("tools/call", {"name": "read_big", "arguments": {"x": "y"}})) is None
    assert reason_of(check, frame("write_file", {})) is None  # not a tool method of this server
    assert reason_of(check, frame("tools/call", {"name": "read_file", "arguments": {"x": "y" * 400}})) == (
        "payload_too_large"
    )
    assert reason_of(check, frame("ping", {"x": "y" * 400}, direction=Direction.SERVER_TO_CLIENT)) is None


def test_outbound_calls_are_checked_by_domain_glob_and_http_method() -> None:
    """Issue 6: outbound domain allowlist and HTTP method allowlist."""
    policy = Policy.from_document(DOCUMENT)
    assert policy.outbound_denial("https://api.example.test/v1", "POST") is None
    assert policy.outbound_denial("https://API.Example.Test/v1", "get") is None
    assert policy.outbound_denial("https://example.test.evil.invalid/", "GET") == "domain_not_allowed"
    assert policy.outbound_denial("http://localhost:8000/", "GET") == "domain_not_allowed"
    assert policy.outbound_denial("http://127.0.0.1:8000/", "DELETE") == "http_method_not_allowed"
    with pytest.raises(Rejection) as caught:
        policy.check_outbound("http://localhost/", "GET")
    assert caught.value.extra["policy_violation"] is True


def test_the_first_matching_tool_rule_sets_timeout_approval_and_limits() -> None:
    """Issue 6: execution timeout per tool (default 30 s), approval and result limits per tool."""
    policy = Policy.from_document(DOCUMENT)
    assert policy.rule_for("read_big").timeout_seconds == 1 and policy.rule_for("read_big").approval is False
    assert policy.rule_for("read_file").approval is True and policy.rule_for("read_file").timeout_seconds == 10
    assert Policy().rule_for("x").timeout_seconds == DEFAULT_TIMEOUT_SECONDS == 30
    policy.check_result("read_big", 30)
    with pytest.raises(Rejection):
        policy.check_result("read_big", 31)


def test_policy_sizes_over_the_frame_limit_are_refused() -> None:
    """Issue 6: per-direction and per-tool sizes live under the global frame limit."""
    with pytest.raises(SetupError):
        Policy.from_document(DOCUMENT).check_limits(100)
    Policy.from_document(DOCUMENT).check_limits(1000)


@pytest.mark.parametrize(
    ("text", "suffix", "fragment"),
    [
        ('{"methods": {"allow": "tools/*"}}', ".json", "at /methods/allow"),
        ('{"tool": [{"timeout_seconds": 1}]}', ".json", "at /tool/0"),
        ('{"outbound": {"methods": ["get"]}}', ".json", "at /outbound/methods/0"),
        ("{", ".json", "line 1"),
        ("default_timeout_seconds = -1", ".toml", "at /default_timeout_seconds"),
        ("[methods\n", ".toml", "line 1"),
    ],
)
def test_a_bad_policy_file_names_the_pointer_or_the_line(
    tmp_path: Path, registry: SchemaRegistry, text: str, suffix: str, fragment: str
) -> None:
    """Issue 6: the policy file is validated against schemas/policy.schema.json at start-up."""
    path = tmp_path / f"policy{suffix}"
    path.write_text(text)
    with pytest.raises(SetupError) as caught:
        load_policy(path, registry)
    assert fragment in str(caught.value)


def test_a_missing_policy_file_is_a_setup_error(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue 6: a bad file is refused at start-up, never ignored."""
    with pytest.raises(SetupError):
        load_policy(tmp_path / "absent.toml", registry)


def test_a_served_timeout_is_a_retryable_catalogued_error(registry: SchemaRegistry, tools: ToolSet) -> None:
    """Issue 6: past the tool's timeout the client gets a retryable timeout error."""
    from mcp_server.serve.tools import Tool

    async def forever(arguments: Any, context: Any) -> dict[str, Any]:
        await asyncio.Event().wait()
        return {}

    slow = Tool(name="diff_assets", title="slow", description="never ends", run=forever)
    policy = Policy.from_document({"tool": [{"match": "diff_assets", "timeout_seconds": 0.05}]})
    handler = build_server(registry, ToolSet([slow], registry), Settings(), policy=policy)
    _, reply = exchange(
        handler,
        [
            initialize_frame("2025-11-25"),
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "diff_assets", "arguments": {"base": 1, "new": 2}},
            },
        ],
    )
    assert reply["error"]["code"] == CanonicalError.TOOL_TIMEOUT.mcp_code
    assert reply["error"]["data"]["retryable"] is True


def test_a_gateway_stage_that_cannot_hold_a_call_denies_one_that_needs_approval() -> None:
    """Issue 6: approval is never silently skipped; where no approver can be reached the call is denied."""
    policy = Policy.from_document(DOCUMENT)
    never = PolicyCheck(policy, CLIENT_TO_SERVER, can_hold=lambda frame, message: False).inspect
    assert reason_of(never, frame("tools/call", {"name": "read_file"})) == "approval_unavailable"
    assert reason_of(PolicyCheck(policy, CLIENT_TO_SERVER).inspect, frame("tools/call", {"name": "read_file"})) is None


def test_results_are_sanitised_only_when_the_policy_says_so(registry: SchemaRegistry) -> None:
    """Issue 6: forwarded payloads are untouched unless the policy says to sanitise results."""
    from mcp_server.serve.tools import Tool

    async def leak(arguments: Any, context: Any) -> dict[str, Any]:
        return {"ok": True, "patch": [{"op": "add", "path": "/to", "value": "carol@example.com"}]}

    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "diff_assets", "arguments": {"base": 1, "new": 2}},
    }
    tools = ToolSet([Tool(name="diff_assets", title="t", description="d", run=leak)], registry)
    for sanitise, expected in ((False, "carol@example.com"), (True, "[REDACTED]")):
        policy = Policy.from_document({"redaction": {"sanitise_results": sanitise}})
        _, reply = exchange(
            build_server(registry, tools, Settings(), policy=policy), [initialize_frame("2025-11-25"), call]
        )
        assert reply["result"]["structuredContent"]["patch"][0]["value"] == expected


def test_populate_backend_outside_the_outbound_allowlist_is_denied_and_sends_nothing(registry: SchemaRegistry) -> None:
    """Issue 6: the outbound allowlist governs populate_backend."""
    from mcp_server.serve.tools.catalog import builtin_tools

    from ..http_backend import http_backend

    with http_backend() as backend:
        env = {"SYN_BACKEND_URL": backend.url.replace("127.0.0.1", "localhost")}
        policy = Policy.from_document({"outbound": {"domains": ["127.0.0.1"]}})
        tools = ToolSet(builtin_tools(env, registry, policy=policy), registry)
        handler = build_server(registry, tools, Settings(), policy=policy)
        [reply] = exchange(
            handler,
            [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "populate_backend",
                    "params": {"asset": {}, "validate_first": False},
                }
            ],
        )
        assert reply["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
        assert reply["error"]["data"]["policy_violation"] is True
        assert backend.received == []


@given(
    glob=st.text(alphabet="ab*?[]!-^.\\", max_size=8),
    name=st.text(alphabet="abAB.-^\\[]!\n", max_size=8),
)
@example(glob="[?-.]", name="?")  # a reversed range: fnmatch leaves it out (RE2 refuses one)
@example(glob="[!?-.]", name="x")
@example(glob="a[b-a-c]", name="a-")
def test_a_glob_matches_as_fnmatch_does_case_included(glob: str, name: str) -> None:
    """Issue 30 rows 1 and 9: globs run on RE2 (linear in the name) with fnmatch's meaning, case included."""
    assert Globs([glob]).matches(name) is fnmatch.fnmatchcase(name, glob)
