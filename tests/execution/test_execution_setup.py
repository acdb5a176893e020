"""Policy at the execution boundary, HTTP-backed tools and the REST face (issue 6), end to end.

A real `mcp-server serve --http` with a policy file and a tool catalogue, in front of a real HTTP
backend on 127.0.0.1; each rule is exercised through MCP ``tools/call`` and through ``/execute``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.core.errors import CanonicalError
from mcp_server.execution.approvals import arguments_digest

from ..conftest import server_env
from ..http_backend import Backend, http_backend
from ..servers import Running, open_session, post, serving

TIMEOUT = 30.0
APPROVER_TOKEN = "approver-token-0123456789abc"  # issue 30: required once calls are held
APPROVER = {"Authorization": f"Bearer {APPROVER_TOKEN}"}
API_KEY = "sk_live_0123456789abcdefXYZ"
SECRETS = (API_KEY, "alice@example.com", "hunter2-very-secret", "tok_abcdefgh1234", "123-45-6789")

POLICY = """
[methods]
deny = ["sampling/createMessage", "resources/*"]

[tools]
deny = ["forbidden_*", "diff_assets"]

[outbound]
domains = ["127.0.0.1"]
methods = ["GET", "POST"]

[limits]
client_to_server_bytes = 20000
server_to_client_bytes = 30000

[approval]
deadline_seconds = 4

[[tool]]
match = "slow_echo"
timeout_seconds = 0.5

[[tool]]
match = "small_echo"
max_argument_bytes = 120

[[tool]]
match = "guarded_*"
approval = true

[redaction]
keys = ["ssn"]
patterns = ["tok_[a-z0-9]{8,}"]
"""


def catalogue(backend_port: int) -> dict[str, Any]:
    def tool(tool_id: str, method: str, path: str, **extra: Any) -> dict[str, Any]:
        return {
            "tool_id": tool_id,
            "name": tool_id,
            "description": f"{method} {path}",
            "args": {"type": "object", "properties": {"item": {"type": "string"}}},
            "method": method,
            "path": path,
            **extra,
        }

    return {
        "tools": [
            tool("echo", "POST", "/echo/{item}", credential={"header": "X-Api-Key", "env": "ECHO_KEY"}),
            tool("get_echo", "GET", "/echo"),
            tool("slow_echo", "POST", "/slow"),
            tool("failing", "POST", "/fail"),
            tool("small_echo", "POST", "/echo"),
            tool("delete_echo", "DELETE", "/echo"),
            tool("forbidden_echo", "POST", "/echo"),
            tool("guarded_echo", "POST", "/echo"),
            tool("narrow_echo", "POST", "/echo", allowed_domains=["api.example.test"]),
            tool(
                "redirect_out",
                "GET",
                "/redirect",
                credential={"header": "X-Api-Key", "env": "ECHO_KEY"},
            ),
        ]
    }


@pytest.fixture(scope="module")
def backend() -> Iterator[Backend]:
    with http_backend() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, backend: Backend) -> Iterator[Running]:
    tmp_path = tmp_path_factory.mktemp("boundary")
    (tmp_path / "policy.toml").write_text(POLICY)
    (tmp_path / "tools.json").write_text(json.dumps(catalogue(backend.port)))
    with serving(
        tmp_path,
        ["--http", "127.0.0.1:0", "--policy", str(tmp_path / "policy.toml"), "--tools", str(tmp_path / "tools.json")],
        MCP_EXECUTION_BASE_URL=backend.url,
        MCP_RUNS_DIR=str(tmp_path / "runs"),
        ECHO_KEY=API_KEY,
        MCP_APPROVER_TOKEN=APPROVER_TOKEN,
    ) as running:
        yield running


def base(server: Running) -> str:
    return server.address.removesuffix("/mcp")


def execute(server: Running, tool_id: str, args: dict[str, Any], **trace: Any) -> httpx.Response:
    body = {
        "session_id": "agent-7",
        "tool_id": tool_id,
        "args": args,
        "trace": {"trace_id": "t-1", "agent_step": 3, "attempt": 1, **trace},
    }
    return httpx.post(f"{base(server)}/execute", json=body, timeout=TIMEOUT)


def mcp_call(server: Running, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    session_id = open_session(server.address)
    frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = post(server.address, frame, **{"Mcp-Session-Id": session_id})
    document: dict[str, Any] = reply.json()
    return document


# -- the tool registry, and a successful execution both ways -----------------------------------


def test_get_tools_lists_the_registry_without_credentials(server: Running) -> None:
    """Issue 6 REST face: GET /tools → tool_id, name, description, args schema, allowed methods and domains."""
    response = httpx.get(f"{base(server)}/tools", timeout=TIMEOUT)
    assert response.status_code == 200
    tools = {tool["tool_id"]: tool for tool in response.json()["tools"]}
    assert set(tools["echo"]) >= {"tool_id", "name", "description", "args", "allowed_methods", "allowed_domains"}
    assert tools["narrow_echo"]["allowed_domains"] == ["api.example.test"]
    assert API_KEY not in response.text


def test_http_tools_appear_in_tools_list_beside_the_built_in_ones(server: Running) -> None:
    """Issue 6: catalogue tools are listed by `serve` next to its own tools."""
    session_id = open_session(server.address)
    listed = post(server.address, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **{"Mcp-Session-Id": session_id})
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert {"echo", "slow_echo", "validate_asset"} <= names


def test_execute_calls_the_backend_with_the_credential_header_and_answers_success(
    server: Running, backend: Backend
) -> None:
    """Issue 6: POST /execute → status success, the result, execution latency/status/request id."""
    backend.received.clear()
    response = execute(server, "echo", {"item": "alice@example.com", "note": "hi"})
    assert response.status_code == 200, response.text
    document = response.json()
    assert document["status"] == "success" and "error" not in document
    assert document["result"]["body"]["echo"]["path"] == "/echo/alice%40example.com"
    assert document["execution"]["status_code"] == 200
    assert document["execution"]["request_id"] == response.headers["x-request-id"]
    assert document["execution"]["latency_ms"] >= 0
    [seen] = backend.received
    assert seen["headers"]["x-api-key"] == API_KEY and seen["body"] == {"note": "hi"}


def test_outbound_calls_reuse_one_connection(server: Running, backend: Backend) -> None:
    """Issue 6: outbound calls use httpx with connection reuse."""
    backend.received.clear()
    for _ in range(3):
        assert execute(server, "get_echo", {"item": "x"}).status_code == 200
    assert len({seen["client_port"] for seen in backend.received}) == 1


def test_the_same_tool_through_mcp_tools_call_reaches_the_backend(server: Running, backend: Backend) -> None:
    """Issue 6: catalogue tools are callable through tools/call."""
    backend.received.clear()
    reply = mcp_call(server, "get_echo", {"item": "x"})
    result = reply["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["body"]["echo"] == {
        "method": "GET",
        "path": "/echo",
        "query": {"item": "x"},
        "body": None,
    }


# -- each rule, allowed and denied, through /execute and through tools/call ---------------------


DENIALS = [
    ("forbidden_echo", {"item": "a"}, "tool_denied"),
    ("delete_echo", {"item": "a"}, "http_method_not_allowed"),
    ("narrow_echo", {"item": "a"}, "domain_not_allowed"),
    ("small_echo", {"item": "a" * 200}, "arguments_too_large"),
]


@pytest.mark.parametrize(("tool", "args", "why"), DENIALS)
def test_a_policy_denial_is_403_with_policy_violation_and_nothing_is_sent(
    server: Running, backend: Backend, tool: str, args: dict[str, Any], why: str
) -> None:
    """Issue 6: a denial is a catalogued error with policy_violation true, 403 on /execute, never a silent drop."""
    backend.received.clear()
    response = execute(server, tool, args)
    assert response.status_code == CanonicalError.POLICY_DENIED.http_status
    error = response.json()["error"]
    assert error["code"] == CanonicalError.POLICY_DENIED.slug and error["policy_violation"] is True
    assert error["details"][0]["msg"] == why and error["retryable"] is False
    reply = mcp_call(server, tool, args)
    assert reply["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
    assert reply["error"]["data"]["policy_violation"] is True
    assert backend.received == []


@pytest.mark.parametrize("tool", ["small_echo", "get_echo"])
def test_the_same_rules_allow_what_they_do_not_deny(server: Running, tool: str) -> None:
    """Issue 6: every rule allows as well as denies (small arguments, an allowed method and domain)."""
    assert execute(server, tool, {"item": "a"}).json()["status"] == "success"
    assert mcp_call(server, tool, {"item": "a"})["result"]["isError"] is False


def test_a_denied_method_is_refused_before_the_schema_check(server: Running) -> None:
    """Issue 6: method denylist; policy is decided before schema validation (resources/list is not served).
    The denial is a JSON-RPC error of a live session: it travels with 200 (issue 18, ADR 0013)."""
    session_id = open_session(server.address)
    reply = post(
        server.address, {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, **{"Mcp-Session-Id": session_id}
    )
    assert reply.status_code == 200
    assert reply.json()["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
    assert reply.json()["error"]["data"] == {
        "ok": False,
        "reason": "policy_denied",
        "errors": [{"path": "/method", "msg": "method_denied"}],
        "policy_violation": True,
    }


def test_a_denied_built_in_tool_is_refused_as_a_method_and_as_tools_call(server: Running) -> None:
    """Issue 6: the tool denylist covers built-in tools, called either way."""
    reply = mcp_call(server, "diff_assets", {"base": {}, "new": {}})
    assert reply["error"]["data"]["policy_violation"] is True
    session_id = open_session(server.address)
    direct = post(
        server.address,
        {"jsonrpc": "2.0", "id": 4, "method": "diff_assets", "params": {"base": {}, "new": {}}},
        **{"Mcp-Session-Id": session_id},
    )
    assert direct.json()["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code


def test_a_payload_over_the_policy_size_for_its_direction_is_denied(server: Running, backend: Backend) -> None:
    """Issue 6: maximum payload size per direction, under the global frame limit; /execute alike."""
    backend.received.clear()
    reply = mcp_call(server, "echo", {"item": "x" * 30_000})
    assert reply["error"]["data"]["errors"][0]["msg"] == "payload_too_large"
    assert reply["error"]["data"]["policy_violation"] is True
    response = execute(server, "echo", {"item": "x", "note": "y" * 30_000})
    assert response.status_code == CanonicalError.POLICY_DENIED.http_status
    assert response.json()["error"]["details"][0]["msg"] == "payload_too_large"
    assert backend.received == []
    # 15 kB each way: within the 20 kB inbound limit, but the echoed result is over the 30 kB outbound one.
    both = {"item": "x", "note": "y" * 15_000, "more": "z" * 15_000}
    assert execute(server, "echo", both).json()["error"]["details"][0]["msg"] == "payload_too_large"
    assert mcp_call(server, "echo", both)["error"]["data"]["errors"][0]["msg"] == "payload_too_large"
    assert execute(server, "echo", {"item": "x", "note": "y" * 10_000}).json()["status"] == "success"


def test_a_redirect_to_a_domain_outside_the_allowlist_is_refused(server: Running, backend: Backend) -> None:
    """Issue 6 tests: a redirect to a domain outside the allowlist is refused (localhost is not 127.0.0.1)."""
    backend.received.clear()
    outside = f"http://localhost:{backend.port}/echo"
    response = execute(server, "redirect_out", {"to": outside})
    assert response.status_code == CanonicalError.POLICY_DENIED.http_status
    assert response.json()["error"]["details"][0]["msg"] == "redirect_domain_not_allowed"
    assert [seen["path"] for seen in backend.received] == ["/redirect"]  # the second hop never went out
    inside = execute(server, "redirect_out", {"to": f"{backend.url}/echo"})
    assert inside.json()["result"]["body"]["echo"]["path"] == "/echo"


def test_a_slow_backend_is_a_retryable_timeout_504(server: Running, backend: Backend) -> None:
    """Issue 6: past the tool's timeout the client gets a retryable timeout error (504 on /execute)."""
    backend.release.clear()
    response = execute(server, "slow_echo", {})
    assert response.status_code == CanonicalError.TOOL_TIMEOUT.http_status
    error = response.json()["error"]
    assert error["code"] == CanonicalError.TOOL_TIMEOUT.slug and error["retryable"] is True
    reply = mcp_call(server, "slow_echo", {})
    assert reply["error"]["code"] == CanonicalError.TOOL_TIMEOUT.mcp_code
    assert reply["error"]["data"]["retryable"] is True
    backend.release.set()


def test_a_failing_backend_is_502_upstream_failure(server: Running) -> None:
    """Issue 6: upstream failure → 502, with the backend's status."""
    response = execute(server, "failing", {})
    assert response.status_code == CanonicalError.UPSTREAM_FAILURE.http_status
    document = response.json()
    assert document["status"] == "failure" and document["error"]["code"] == CanonicalError.UPSTREAM_FAILURE.slug
    assert document["execution"]["status_code"] == 500 and document["error"]["retryable"] is True


# -- malformed /execute requests ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "content_type", "member"),
    [
        (b'{"tool_id":"echo"}', "text/plain", CanonicalError.UNSUPPORTED_MEDIA_TYPE),
        (b"{not json", "application/json", CanonicalError.INVALID_REQUEST_BODY),
        (b'{"tool_id":"echo","args":{}}', "application/json", CanonicalError.INVALID_REQUEST_BODY),
        (
            b'{"session_id":"s","tool_id":"echo","args":[],"trace":{"trace_id":"t"}}',
            "application/json",
            CanonicalError.INVALID_REQUEST_BODY,
        ),
        (
            b'{"session_id":"s","tool_id":"nope","args":{},"trace":{"trace_id":"t"}}',
            "application/json",
            CanonicalError.TOOL_NOT_FOUND,
        ),
        (
            b'{"session_id":"s","tool_id":"echo","args":{"item":5},"trace":{"trace_id":"t"}}',
            "application/json",
            CanonicalError.INVALID_TOOL_INPUT,
        ),
    ],
)
def test_a_malformed_execute_request_gets_its_catalogued_status_and_error_object(
    server: Running, content: bytes, content_type: str, member: CanonicalError
) -> None:
    """Issue 6: another content type → 415; missing or malformed fields → 4xx with the error object."""
    response = httpx.post(
        f"{base(server)}/execute", content=content, headers={"Content-Type": content_type}, timeout=TIMEOUT
    )
    assert response.status_code == member.http_status
    error = response.json()["error"]
    assert error["code"] == member.slug
    assert set(error) == {"code", "message", "details", "retryable", "policy_violation"}


def test_execute_only_answers_post(server: Running) -> None:
    """Issue 6: /execute is POST only; the refusal's status comes from the catalogue."""
    response = httpx.get(f"{base(server)}/execute", timeout=TIMEOUT)
    assert response.status_code == CanonicalError.HTTP_METHOD_NOT_ALLOWED.http_status


# -- health ----------------------------------------------------------------------------------


def test_health_reports_schemas_and_the_execution_base_url(server: Running) -> None:
    """Issue 6: GET /health → ok plus dependency checks."""
    response = httpx.get(f"{base(server)}/health", timeout=TIMEOUT)
    assert response.status_code == 200
    document = response.json()
    assert document["status"] == "ok"
    assert document["checks"]["schemas"]["ok"] is True and document["checks"]["execution_base_url"]["ok"] is True


def test_health_is_503_when_the_execution_base_url_is_unreachable(tmp_path: Path) -> None:
    """Issue 6: a dependency check failing makes /health degraded, its status from the catalogue."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    (tmp_path / "tools.json").write_text(json.dumps(catalogue(1)))
    with serving(
        tmp_path,
        ["--http", "127.0.0.1:0", "--tools", str(tmp_path / "tools.json")],
        MCP_EXECUTION_BASE_URL=closed,
        ECHO_KEY=API_KEY,
    ) as running:
        response = httpx.get(f"{base(running)}/health", timeout=TIMEOUT)
    assert response.status_code == CanonicalError.DEPENDENCY_UNAVAILABLE.http_status
    assert response.json()["checks"]["execution_base_url"]["ok"] is False


# -- approvals -------------------------------------------------------------------------------


def pending_approval(server: Running, tool: str) -> dict[str, Any]:
    """The first held call of ``tool`` (bounded wait: the call is in flight in another thread)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        held = httpx.get(f"{base(server)}/approvals", headers=APPROVER, timeout=TIMEOUT).json()["pending"]
        for entry in held:
            if entry["tool"] == tool:
                return dict(entry)
        time.sleep(0.02)
    raise AssertionError("no call was held")


def in_background(function: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(function(*args)), daemon=True)
    thread.start()
    return thread, out


def test_an_approved_call_runs_and_a_denied_one_is_403(server: Running, backend: Backend) -> None:
    """Issue 6: the call is held; POST /approvals/{id} allows or denies it."""
    arguments = {"item": "ok", "password": "hunter2-very-secret"}
    thread, out = in_background(execute, server, "guarded_echo", arguments)
    held = pending_approval(server, "guarded_echo")
    assert held["arguments_sha256"] == arguments_digest(arguments)
    assert held["arguments"]["password"] == "[REDACTED]"
    decision = {"decision": "allow", "arguments_sha256": held["arguments_sha256"]}
    answered = httpx.post(f"{base(server)}/approvals/{held['id']}", json=decision, headers=APPROVER, timeout=TIMEOUT)
    assert answered.status_code == 200
    thread.join(TIMEOUT)
    assert out[0].json()["status"] == "success"

    thread, out = in_background(mcp_call, server, "guarded_echo", {"item": "no"})
    held = pending_approval(server, "guarded_echo")
    httpx.post(f"{base(server)}/approvals/{held['id']}", json={"decision": "deny"}, headers=APPROVER, timeout=TIMEOUT)
    thread.join(TIMEOUT)
    assert out[0]["error"]["code"] == CanonicalError.APPROVAL_DENIED.mcp_code
    assert out[0]["error"]["data"]["policy_violation"] is True
    # Issue 7: each policy decision is an event: held, then allowed; held, then denied.
    deadline = time.monotonic() + TIMEOUT
    while True:
        events = [json.loads(line) for line in event_log_of(server).read_text().splitlines() if line]
        decisions = [e["status"] for e in events if e["event"] == "policy" and e["tool_id"] == "guarded_echo"]
        if decisions[-4:] == ["held", "allowed", "held", "denied"] or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert decisions[-4:] == ["held", "allowed", "held", "denied"]


def test_an_approval_for_other_arguments_is_refused_and_the_call_stays_held(server: Running) -> None:
    """Issue 6: the approval is bound to the SHA-256 of the canonical arguments; changed arguments need a new one."""
    thread, out = in_background(execute, server, "guarded_echo", {"item": "b"})
    held = pending_approval(server, "guarded_echo")
    stale = {"decision": "allow", "arguments_sha256": arguments_digest({"item": "a"})}
    refused = httpx.post(f"{base(server)}/approvals/{held['id']}", json=stale, headers=APPROVER, timeout=TIMEOUT)
    assert refused.status_code == CanonicalError.APPROVAL_MISMATCH.http_status
    assert refused.json()["error"]["code"] == CanonicalError.APPROVAL_MISMATCH.slug
    assert pending_approval(server, "guarded_echo")["id"] == held["id"]
    command = [sys.executable, "-m", "mcp_server", "approvals", "--url", base(server)]
    allowed = subprocess.run(
        [*command, "allow", held["id"], held["arguments_sha256"]],
        capture_output=True,
        env=server_env(Path("."), MCP_APPROVER_TOKEN=APPROVER_TOKEN),
        timeout=TIMEOUT,
    )
    assert allowed.returncode == 0, allowed.stderr
    thread.join(TIMEOUT)
    assert out[0].json()["status"] == "success"


def test_an_unanswered_approval_expires_as_a_denial(server: Running) -> None:
    """Issue 6: unanswered past the deadline = denied."""
    response = execute(server, "guarded_echo", {"item": "late"})
    assert response.status_code == CanonicalError.APPROVAL_EXPIRED.http_status
    error = response.json()["error"]
    assert error["code"] == CanonicalError.APPROVAL_EXPIRED.slug and error["policy_violation"] is True


def test_the_approvals_command_lists_held_calls_and_refuses_an_unknown_id(server: Running) -> None:
    """Issue 6: the CLI `mcp-server approvals` lists and answers; an unknown id is refused (exit 1)."""
    command = [sys.executable, "-m", "mcp_server", "approvals", "--url", base(server)]
    env = server_env(Path("."), MCP_APPROVER_TOKEN=APPROVER_TOKEN)
    listed = subprocess.run([*command, "list"], capture_output=True, env=env, timeout=TIMEOUT)
    assert listed.returncode == 0 and "pending" in json.loads(listed.stdout)
    unknown = subprocess.run([*command, "deny", "f" * 16], capture_output=True, env=env, timeout=TIMEOUT)
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout)["error"]["code"] == CanonicalError.APPROVAL_NOT_FOUND.slug


# -- redaction and the execution records ---------------------------------------------------------


def test_no_secret_used_in_these_tests_appears_in_any_log_line(server: Running, backend: Backend) -> None:
    """Issue 6 tests: redaction verified by scanning every log line written for the secrets used."""
    backend.release.set()
    execute(server, "echo", {"item": "tok_abcdefgh1234", "ssn": "123-45-6789"})
    execute(server, "echo", {"item": "alice@example.com", "password": "hunter2-very-secret"})
    execute(server, "forbidden_echo", {"item": "alice@example.com"})
    execute(server, "failing", {"password": "hunter2-very-secret"})
    backend.release.clear()
    execute(server, "slow_echo", {"token": "tok_abcdefgh1234"})
    backend.release.set()
    mcp_call(server, "echo", {"item": "alice@example.com", "ssn": "123-45-6789"})
    classes = {"policy_denied", "tool_timeout", "upstream_failure"}
    records = records_of(server, until=lambda found: {r["error_class"] for r in found} >= classes)
    assert records, server.stderr()
    for secret in SECRETS:
        assert secret not in server.stderr()
        assert secret not in event_log_of(server).read_text()
    fields = {
        "timestamp", "session_id", "trace_id", "tool_id", "endpoint", "domain", "method", "agent_step",
        "attempt", "status_code", "latency_ms", "error_class", "redaction_applied",
    }  # fmt: skip
    assert all(set(record) == fields for record in records)
    echoed = [
        r for r in records if r["tool_id"] == "echo" and r["session_id"] == "agent-7" and r["error_class"] is None
    ]
    # Issue 30: a path argument is named by its placeholder, never logged (it was redacted only when
    # a pattern knew it).
    assert len(echoed) >= 2 and all(r["endpoint"].endswith("/echo/{item}") and r["redaction_applied"] for r in echoed)
    assert {r["error_class"] for r in records} >= {"policy_denied", "tool_timeout", "upstream_failure"}


def one_tool(**changes: Any) -> dict[str, Any]:
    entry = catalogue(1)["tools"][0] | changes
    return {"tools": [entry]}


@pytest.mark.parametrize(
    ("document", "env", "fragment"),
    [
        (one_tool(), {"ECHO_KEY": API_KEY}, "MCP_EXECUTION_BASE_URL must be set"),
        (one_tool(), {"ECHO_KEY": API_KEY, "MCP_EXECUTION_BASE_URL": "ftp://x"}, "MCP_EXECUTION_BASE_URL must be"),
        (one_tool(), {"MCP_EXECUTION_BASE_URL": "http://127.0.0.1:9"}, "ECHO_KEY is not set"),
        (one_tool(method="TRACE"), {"MCP_EXECUTION_BASE_URL": "http://127.0.0.1:9"}, "at /tools/0/method"),
        (one_tool(name="validate_asset"), {"ECHO_KEY": "k", "MCP_EXECUTION_BASE_URL": "http://h"}, "built-in"),
        (
            one_tool(args={"type": "nonsense"}),
            {"ECHO_KEY": "k", "MCP_EXECUTION_BASE_URL": "http://h"},
            "/tools/0/args",
        ),
        (one_tool(), {"ECHO_KEY": "k", "MCP_EXECUTION_BASE_URL": "http://h", "MCP_APPROVER_TOKEN": "short"}, "TOKEN"),
    ],
)
def test_bad_catalogue_files_and_environment_values_exit_2(
    tmp_path: Path, document: dict[str, Any], env: dict[str, str], fragment: str
) -> None:
    """Issue 6: every bad input is refused at start-up with exit 2 and a clear error."""
    (tmp_path / "tools.json").write_text(json.dumps(document))
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve", "--tools", str(tmp_path / "tools.json")],
        capture_output=True,
        env=server_env(tmp_path, **env),
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert result.returncode == 2
    line = result.stderr.decode()
    assert "mcp:error reason=setup_failed" in line and fragment in line


def test_the_policy_file_may_come_from_the_environment(tmp_path: Path) -> None:
    """Issue 6: `--policy FILE` or MCP_POLICY_FILE; a bad one exits 2."""
    (tmp_path / "policy.json").write_text('{"limits": {"client_to_server_bytes": "big"}}')
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve"],
        capture_output=True,
        env=server_env(tmp_path, MCP_POLICY_FILE=str(tmp_path / "policy.json")),
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert result.returncode == 2 and "at /limits/client_to_server_bytes" in result.stderr.decode()


def event_log_of(running: Running) -> Path:
    """The running server's event log: the file it is writing under its own runs folder."""
    [path] = (running.ready_file.parent / "runs" / "mcp_server" / "serve").glob("*.jsonl.partial")
    return path


def records_of(running: Running, until: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """Issue 6 logs: the execution records, as the fields of the event log's ``execution`` events,
    once ``until`` holds for them (the log's writer flushes within its period; bounded wait)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        records = _records(running)
        if until(records) or time.monotonic() > deadline:
            return records
        time.sleep(0.02)


def _records(running: Running) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in event_log_of(running).read_text().splitlines() if line]
    return [
        {
            "timestamp": e["ts"],
            "session_id": e["session_id"],
            "trace_id": e["trace_id"],
            "tool_id": e["tool_id"],
            "endpoint": e["endpoint"],
            "domain": e["domain"],
            "method": e["http_method"],
            "agent_step": e["agent_step"],
            "attempt": e["attempt"],
            "status_code": e["status_code"],
            "latency_ms": e["latency_ms"],
            "error_class": e["error_class"],
            "redaction_applied": e["redaction_applied"],
        }
        for e in events
        if e["event"] == "execution"
    ]


def test_an_mcp_call_s_trace_comes_from_its_meta(server: Running) -> None:
    """Issue 6 logs: every execution logs session_id, trace_id, agent_step and attempt."""
    session_id = open_session(server.address)
    meta = {"trace_id": "mcp-trace-9", "agent_step": 2, "attempt": 3}
    frame = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "get_echo", "arguments": {"item": "x"}, "_meta": meta},
    }
    assert post(server.address, frame, **{"Mcp-Session-Id": session_id}).json()["result"]["isError"] is False
    found = records_of(server, until=lambda records: any(r["trace_id"] == "mcp-trace-9" for r in records))
    [record] = [r for r in found if r["trace_id"] == "mcp-trace-9"]
    assert (record["session_id"], record["agent_step"], record["attempt"]) == (session_id, 2, 3)
    assert (record["method"], record["domain"], record["status_code"]) == ("GET", "127.0.0.1", 200)


def test_the_approver_token_guards_the_approvals_endpoints(tmp_path: Path) -> None:
    """Issue 6: only an approver decides; with MCP_APPROVER_TOKEN set, /approvals wants it as a bearer token."""
    token = "approver-token-0123456789"
    with serving(tmp_path, ["--http", "127.0.0.1:0"], MCP_APPROVER_TOKEN=token) as running:
        url = f"{base(running)}/approvals"
        refused = httpx.get(url, timeout=TIMEOUT)
        wrong = httpx.get(url, headers={"Authorization": "Bearer nope"}, timeout=TIMEOUT)
        allowed = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
        decided = httpx.post(f"{url}/abc", json={"decision": "deny"}, timeout=TIMEOUT)
    assert refused.status_code == wrong.status_code == CanonicalError.APPROVER_UNAUTHORIZED.http_status
    assert refused.json()["error"]["code"] == CanonicalError.APPROVER_UNAUTHORIZED.slug
    assert allowed.status_code == 200 and allowed.json() == {"pending": []}
    assert decided.status_code == CanonicalError.APPROVER_UNAUTHORIZED.http_status


def test_health_checks_an_http_upstream_when_one_is_configured(registry: Any, backend: Backend) -> None:
    """Issue 6: GET /health checks that an HTTP upstream is reachable (the gateway's HTTP front passes its URL)."""
    import asyncio
    import socket

    from mcp_server.execution.approvals import ApprovalBook
    from mcp_server.execution.gate import ExecutionGate
    from mcp_server.execution.policy import Policy
    from mcp_server.serve.http_app import serve_http_app
    from mcp_server.serve.rest import RestFace
    from mcp_server.transport.streamable import HttpOptions

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"

    async def no_mcp(frame: Any) -> None:
        return None  # only the REST face is asked here

    async def health(upstream: str) -> httpx.Response:
        policy = Policy()
        gate = ExecutionGate(policy, ApprovalBook(deadline_seconds=1, redactor=policy.redactor))
        rest = RestFace(registry=registry, gate=gate, executor=None, max_body_bytes=1024, upstream_url=upstream)
        app = serve_http_app(no_mcp, registry, HttpOptions(max_frame_bytes=1024), rest)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.get("/health")

    up = asyncio.run(health(f"{backend.url}/echo"))
    assert up.status_code == 200 and up.json()["checks"]["upstream"]["ok"] is True
    down = asyncio.run(health(closed))
    assert down.status_code == CanonicalError.DEPENDENCY_UNAVAILABLE.http_status
    assert down.json()["status"] == "degraded" and down.json()["checks"]["upstream"]["ok"] is False
