"""The policy in `mcp-server gateway`: denials, execution timeouts, redacted reports (issue 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, server_env
from .clients import approve_then_refuse
from .gateways import APPROVAL_POLICY, WAIT, Peer, gateway_command, handshake, report_of

SECRET = "sk_live_abcdefghijklmnop0123"
POLICY = """
[methods]
deny = ["resources/*"]

[tools]
deny = ["die"]

[[tool]]
match = "hang"
timeout_seconds = 0.5

[[tool]]
match = "strict"
max_result_bytes = 20
"""


def broken_upstream_with_a_secret_argument() -> list[str]:
    """The broken upstream, started with a command line that carries a credential."""
    return [sys.executable, str(ROOT / "tests" / "upstreams" / "broken_server.py"), f"--api-key={SECRET}"]


def test_the_gateway_denies_by_method_and_tool_times_out_and_redacts(tmp_path: Path) -> None:
    """Issue 6: policy governs gateway traffic; past the timeout the client gets a retryable error and the
    upstream gets notifications/cancelled; secrets never reach the report or stderr."""
    (tmp_path / "policy.toml").write_text(POLICY)
    peer = Peer(tmp_path, "--policy", str(tmp_path / "policy.toml"), upstream=broken_upstream_with_a_secret_argument())
    handshake(peer, "2025-11-25")
    listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "resources/list"})
    assert listed["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
    assert listed["error"]["data"]["policy_violation"] is True
    died = peer.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "die", "arguments": {}}})
    assert died["error"]["data"]["errors"] == [{"path": "/params/name", "msg": "tool_denied"}]
    hung = peer.call({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "hang", "arguments": {}}})
    assert hung["id"] == 4 and hung["error"]["code"] == CanonicalError.TOOL_TIMEOUT.mcp_code
    assert hung["error"]["data"]["retryable"] is True
    big = peer.call(
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "strict", "arguments": {"n": 1}}}
    )
    assert big["id"] == 6 and big["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
    assert big["error"]["data"]["errors"] == [{"path": "/result", "msg": "result_too_large"}]
    assert big["error"]["data"]["policy_violation"] is True
    fine = peer.call({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "junk", "arguments": {}}})
    assert fine["result"]["content"][0]["text"] == "ok"  # the upstream is alive: `die` never reached it
    status, stderr = peer.finish()
    assert status == 0, stderr
    assert 'cancelled {"requestId": 4, "reason": "timeout"}' in stderr
    report = report_of(tmp_path)
    assert report["violations"]["policy_denied"] == 3 and report["violations"]["tool_timeout"] == 1
    written = "".join(path.read_text() for path in (tmp_path / "runs").rglob("*.json"))
    assert SECRET not in stderr and SECRET not in written
    assert "[REDACTED]" in report["upstream"]
    assert all("redaction_applied" in example for examples in report["examples"].values() for example in examples)


def test_a_bad_policy_file_exits_2_naming_the_pointer_or_the_line(tmp_path: Path) -> None:
    """Issue 6: the policy is validated against its schema at start-up; a bad file exits 2 naming where."""
    cases = {
        "bad.json": ('{"tools": {"deny": "die"}}', "at /tools/deny"),
        "bad.toml": ("[tools]\ndeny = =\n", "line 2, column 8"),
        "bad-syntax.json": ('{"tools": {"deny": [}}', "line 1"),
        "worse.toml": ("[redaction]\npatterns = ['(unclosed']\n", "at /redaction/patterns/0"),
        "big.toml": ("[limits]\nclient_to_server_bytes = 99999999\n", "exceeds the frame limit"),
    }
    for name, (text, fragment) in cases.items():
        (tmp_path / name).write_text(text)
        result = subprocess.run(
            gateway_command("--policy", str(tmp_path / name)),
            capture_output=True,
            timeout=WAIT,
            env=server_env(tmp_path),
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 2, name
        assert "mcp:error reason=setup_failed" in result.stderr.decode() and fragment in result.stderr.decode(), name


def test_an_http_upstream_outside_the_outbound_allowlist_is_refused_at_start(tmp_path: Path) -> None:
    """Issue 6: the outbound allowlist governs the gateway's HTTP upstream too."""
    (tmp_path / "policy.json").write_text(json.dumps({"outbound": {"domains": ["api.example.test"]}}))
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "gateway", "--policy", str(tmp_path / "policy.json"),
         "--upstream", "http://127.0.0.1:9/mcp"],
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 2 and "domain_not_allowed" in result.stderr.decode()


def test_the_gateway_asks_an_elicitation_capable_client_to_approve_a_held_call(tmp_path: Path) -> None:
    """Issue 6: approval in the gateway, through an elicitation request to the official SDK client."""
    (tmp_path / "policy.toml").write_text(APPROVAL_POLICY)
    command = gateway_command("--policy", str(tmp_path / "policy.toml"))
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    )
    assert len(approve_then_refuse(parameters)) == 2
    assert report_of(tmp_path)["violations"] == {"approval_denied": 1}
