"""`mcp-server gateway --listen http://HOST:PORT/mcp`: the Streamable HTTP front (issue 9).

Real processes and sockets: the gateway under uvicorn, the SDK conformance target (or the broken
upstream) behind it over STDIO, the official `mcp` SDK client or raw httpx in front. Where the test
is not about the upstream's process (its start, count or end), the target is imported once and forked
per session (`target_forks`).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types
from mcp.client.client import Client

from mcp_server.core.errors import CanonicalError

from ..conftest import server_env
from ..processes import free_port, running, wait_gone
from .clients import approve_then_refuse
from .gateways import (
    APPROVAL_POLICY,
    BROKEN_UPSTREAM,
    HEADERS,
    SDK_UPSTREAM,
    TARGET,
    VERSION,
    WAIT,
    assert_refused,
    body_of,
    http_gateway,
    initialize,
    report_of,
    rpc,
)


async def _sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sampled"), model="test-model"
    )


async def _elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.org"})


async def _session(url: str, mode: str) -> list[Any]:
    """One SDK client session: what it sees of the target, server→client requests included."""
    logs: list[Any] = []
    progress: list[float] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with Client(
        url,
        mode=mode,
        read_timeout_seconds=WAIT,
        sampling_callback=_sampling,
        elicitation_callback=_elicitation,
        logging_callback=on_log,
    ) as client:
        listed = await client.list_tools()
        simple = await client.call_tool("test_simple_text", {})
        stepped = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        seen: list[Any] = [
            client.protocol_version,
            sorted(tool.name for tool in listed.tools),
            [block.model_dump(by_alias=True, exclude_none=True) for block in simple.content],
            stepped.is_error,
        ]
        if mode == "legacy":  # server→client requests: the stateful protocol's
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            elicited = await client.call_tool("test_elicitation", {"message": "who?"})
            logged = await client.call_tool("test_tool_with_logging", {})
            seen += [
                [block.model_dump(exclude_none=True) for block in sampled.content],
                [block.model_dump(exclude_none=True) for block in elicited.content],
                logged.is_error,
            ]
    return [*seen, sorted(progress), logs]


@pytest.mark.parametrize(("mode", "version"), [("legacy", VERSION), ("2026-07-28", "2026-07-28")])
def test_the_official_client_over_http_sees_the_same_server_through_the_gateway_as_direct(
    tmp_path: Path, target_forks: list[str], mode: str, version: str
) -> None:
    """Issue 9: a gateway is invisible on valid traffic: sampling, elicitation, progress, logging included."""
    port = free_port()
    with running([*TARGET, "--http", str(port)], f"http://127.0.0.1:{port}/mcp", server_env(tmp_path)) as direct_url:
        direct = asyncio.run(asyncio.wait_for(_session(direct_url, mode), WAIT))
    with http_gateway(tmp_path, upstream=target_forks) as gateway:
        through = asyncio.run(asyncio.wait_for(_session(gateway.url, mode), WAIT))
    assert through == direct
    assert through[0] == version
    assert through[-2] == [0, 50, 100]
    if mode == "legacy":
        assert through[4][0]["text"] == "LLM response: sampled"
        assert "ada@example.org" in through[5][0]["text"]
        assert len(through[-1]) == 3
    assert report_of(tmp_path)["violations"] == {}


def test_progress_and_logging_are_never_dropped_across_concurrent_calls(
    tmp_path: Path, target_forks: list[str]
) -> None:
    """Issue 9: progress and logging notifications are never dropped (the suite counts them)."""
    calls = 12

    async def session(url: str) -> tuple[list[int], int]:
        logs: list[Any] = []

        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            logs.append(params.data)

        async with Client(url, mode="legacy", read_timeout_seconds=WAIT, logging_callback=on_log) as client:
            counts = [0] * calls

            async def stepped(index: int) -> None:
                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    counts[index] += 1

                await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)

            await asyncio.gather(
                *(stepped(index) for index in range(calls)),
                *(client.call_tool("test_tool_with_logging", {}) for _ in range(calls)),
            )
            return counts, len(logs)

    with http_gateway(tmp_path, upstream=target_forks) as gateway:
        counts, logged = asyncio.run(asyncio.wait_for(session(gateway.url), WAIT))
    assert counts == [3] * calls
    assert logged == 3 * calls


def test_each_session_gets_its_own_upstream_and_delete_ends_it(tmp_path: Path) -> None:
    """Issue 9: one upstream process per Mcp-Session-Id for a STDIO upstream; reaped at DELETE."""
    with http_gateway(tmp_path) as gateway, httpx.Client(timeout=WAIT) as client:
        first, second = initialize(client, gateway.url), initialize(client, gateway.url)
        assert first != second
        children = gateway.children()
        assert len(children) == 2
        for session_id in (first, second):  # the same request id in both sessions: no collision
            reply = client.post(
                gateway.url,
                json=rpc(1, "tools/call", {"name": "test_simple_text", "arguments": {}}),
                headers={**HEADERS, "Mcp-Session-Id": session_id},
            )
            assert body_of(reply)["id"] == 1 and body_of(reply)["result"]["content"][0]["type"] == "text"
        deleted = client.delete(gateway.url, headers={"Mcp-Session-Id": first})
        assert deleted.status_code == 204
        assert len(gateway.children()) == 1
        for child in children:
            if child not in gateway.children():
                wait_gone(child)
        after = client.post(gateway.url, json=rpc(2, "ping"), headers={**HEADERS, "Mcp-Session-Id": first})
        assert_refused(after, CanonicalError.UNKNOWN_SESSION)
        assert_refused(client.delete(gateway.url, headers={"Mcp-Session-Id": first}), CanonicalError.UNKNOWN_SESSION)
        assert_refused(client.delete(gateway.url), CanonicalError.SESSION_REQUIRED)
        alive = client.post(gateway.url, json=rpc(3, "ping"), headers={**HEADERS, "Mcp-Session-Id": second})
        assert body_of(alive) == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_an_idle_session_is_reaped_after_the_timeout(tmp_path: Path) -> None:
    """Issue 9: a session's upstream is reaped after an idle timeout; the session is then unknown."""
    with http_gateway(tmp_path, "--idle-timeout", "0.5") as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)
        [child] = gateway.children()
        wait_gone(child)
        deadline = time.monotonic() + WAIT
        while gateway.children():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        after = client.post(gateway.url, json=rpc(1, "ping"), headers={**HEADERS, "Mcp-Session-Id": session_id})
        assert_refused(after, CanonicalError.UNKNOWN_SESSION)


def test_a_session_past_the_cap_is_refused_with_too_many_sessions(tmp_path: Path) -> None:
    """Issue 9: a cap on concurrent sessions, with a clear error past it; no upstream is started for it."""
    with http_gateway(tmp_path, "--max-sessions", "1") as gateway, httpx.Client(timeout=WAIT) as client:
        initialize(client, gateway.url)
        params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        refused = client.post(gateway.url, json=rpc(0, "initialize", params), headers=HEADERS)
        assert_refused(refused, CanonicalError.TOO_MANY_SESSIONS)
        assert len(gateway.children()) == 1


def test_a_foreign_host_or_origin_is_refused_before_any_upstream_starts(tmp_path: Path) -> None:
    """Issue 9 / spec transports "Security Warning": DNS-rebinding protection as in the HTTP transport."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    with http_gateway(tmp_path) as gateway, httpx.Client(timeout=WAIT) as client:
        for extra in ({"Host": "evil.example.com"}, {"Origin": "http://evil.example.com"}):
            refused = client.post(gateway.url, json=rpc(0, "initialize", params), headers={**HEADERS, **extra})
            assert_refused(refused, CanonicalError.HOST_NOT_ALLOWED)
        assert gateway.children() == []


def test_http_level_refusals_come_from_the_catalogue(tmp_path: Path, target_forks: list[str]) -> None:
    """Issue 9: Accept, Content-Type, unknown path, GET without a session, PUT, an unknown protocol version."""
    with http_gateway(tmp_path, upstream=target_forks) as gateway, httpx.Client(timeout=WAIT) as client:
        url = gateway.url
        bad_accept = client.post(url, json=rpc(1, "ping"), headers={**HEADERS, "Accept": "text/html"})
        assert_refused(bad_accept, CanonicalError.NOT_ACCEPTABLE)
        bad_type = client.post(url, content=b"{}", headers={**HEADERS, "Content-Type": "text/plain"})
        assert_refused(bad_type, CanonicalError.UNSUPPORTED_MEDIA_TYPE)
        assert_refused(
            client.post(url + "/elsewhere", json=rpc(1, "ping"), headers=HEADERS), CanonicalError.ROUTE_NOT_FOUND
        )
        assert_refused(client.get(url, headers={"Accept": "text/event-stream"}), CanonicalError.SESSION_REQUIRED)
        assert_refused(client.put(url, json=rpc(1, "ping"), headers=HEADERS), CanonicalError.HTTP_METHOD_NOT_ALLOWED)
        session_id = initialize(client, url)
        unknown_version = client.post(
            url,
            json=rpc(2, "ping"),
            headers={**HEADERS, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "1999-01-01"},
        )
        assert_refused(unknown_version, CanonicalError.UNSUPPORTED_PROTOCOL_VERSION)
        unknown = client.post(url, json=rpc(3, "ping"), headers={**HEADERS, "Mcp-Session-Id": "no-such-session"})
        assert_refused(unknown, CanonicalError.UNKNOWN_SESSION)


def test_a_second_get_stream_for_a_session_is_refused(tmp_path: Path, target_forks: list[str]) -> None:
    """Issue 9 / spec transports: one GET stream per session carries what belongs to no request."""
    with http_gateway(tmp_path, upstream=target_forks) as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id}
        with client.stream("GET", gateway.url, headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert_refused(client.get(gateway.url, headers=headers), CanonicalError.STREAM_ALREADY_OPEN)


def test_invalid_arguments_never_reach_the_upstream_over_http(tmp_path: Path, target_forks: list[str]) -> None:
    """Issue 9: the gateway enforces as it does on STDIO: a bad call is answered by the gateway."""
    with http_gateway(tmp_path, upstream=target_forks) as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id}
        assert body_of(client.post(gateway.url, json=rpc(1, "tools/list"), headers=headers))["result"]["tools"]
        bad = client.post(
            gateway.url,
            json=rpc(2, "tools/call", {"name": "test_sampling", "arguments": {"prompt": 5}}),
            headers=headers,
        )
        assert body_of(bad)["result"]["isError"] is True
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_input": 1}
    assert report["frames"]["server_to_client"].get("tools/call") is None


def test_an_upstream_that_dies_answers_its_pending_request_and_ends_the_session(tmp_path: Path) -> None:
    """Issue 9 / issue 5: a request the upstream will never answer gets UPSTREAM_UNAVAILABLE."""
    with http_gateway(tmp_path, upstream=BROKEN_UPSTREAM) as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id}
        client.post(gateway.url, json=rpc(1, "tools/list"), headers=headers)
        died = client.post(gateway.url, json=rpc(2, "tools/call", {"name": "die", "arguments": {}}), headers=headers)
        assert body_of(died)["id"] == 2
        assert body_of(died)["error"]["code"] == CanonicalError.UPSTREAM_UNAVAILABLE.mcp_code
        assert_refused(client.post(gateway.url, json=rpc(3, "ping"), headers=headers), CanonicalError.UNKNOWN_SESSION)


def test_a_call_past_its_tools_timeout_is_answered_and_cancelled_upstream_over_http(tmp_path: Path) -> None:
    """Issue 6 on the HTTP front: past the policy's timeout the POST gets a retryable TOOL_TIMEOUT, the
    upstream gets notifications/cancelled, and the session goes on."""
    (tmp_path / "policy.toml").write_text('[[tool]]\nmatch = "hang"\ntimeout_seconds = 0.5\n')
    options = ("--policy", str(tmp_path / "policy.toml"))
    with http_gateway(tmp_path, *options, upstream=BROKEN_UPSTREAM) as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id}
        client.post(gateway.url, json=rpc(1, "tools/list"), headers=headers)
        began = time.monotonic()
        hung = client.post(gateway.url, json=rpc(2, "tools/call", {"name": "hang", "arguments": {}}), headers=headers)
        assert 0.5 <= time.monotonic() - began < WAIT
        assert hung.status_code == 200 and body_of(hung)["id"] == 2
        assert body_of(hung)["error"]["code"] == CanonicalError.TOOL_TIMEOUT.mcp_code
        assert body_of(hung)["error"]["data"]["retryable"] is True
        fine = client.post(gateway.url, json=rpc(3, "tools/call", {"name": "junk", "arguments": {}}), headers=headers)
        assert body_of(fine)["result"]["content"][0]["text"] == "ok"
        gateway.process.send_signal(signal.SIGTERM)
        assert gateway.process.stderr is not None
        stderr = gateway.process.stderr.read().decode()
    assert 'cancelled {"requestId": 2, "reason": "timeout"}' in stderr
    assert report_of(tmp_path)["violations"]["tool_timeout"] == 1


def test_a_held_call_is_approved_or_refused_by_the_clients_user_over_http(tmp_path: Path) -> None:
    """Issue 6 on the HTTP front: a call the policy holds is asked of the official SDK client (which
    declared elicitation) on the call's own event stream; yes runs it, no answers APPROVAL_DENIED."""
    (tmp_path / "policy.toml").write_text(APPROVAL_POLICY)
    with http_gateway(tmp_path, "--policy", str(tmp_path / "policy.toml"), upstream=SDK_UPSTREAM) as gateway:
        asked = approve_then_refuse(gateway.url)
    assert len(asked) == 2 and all("echo" in message for message in asked)
    assert report_of(tmp_path)["violations"] == {"approval_denied": 1}


def test_a_held_call_from_a_client_that_cannot_be_asked_is_denied_over_http(tmp_path: Path) -> None:
    """Approval fails closed: a client without elicitation, or a POST that takes only JSON (no stream
    to carry the question), gets the policy's denial and the upstream never sees the call."""
    (tmp_path / "policy.toml").write_text(APPROVAL_POLICY)
    options = ("--policy", str(tmp_path / "policy.toml"))
    with http_gateway(tmp_path, *options, upstream=SDK_UPSTREAM) as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)  # declares no elicitation
        call = rpc(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        denied = body_of(client.post(gateway.url, json=call, headers={**HEADERS, "Mcp-Session-Id": session_id}))
        assert denied["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
        assert denied["error"]["data"]["errors"] == [{"path": "/params/name", "msg": "approval_unavailable"}]
        params = {
            "protocolVersion": VERSION,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        opened = client.post(gateway.url, json=rpc(0, "initialize", params), headers=HEADERS)
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        client.post(gateway.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        json_only = client.post(gateway.url, json=call, headers=headers)
        assert json_only.headers["content-type"].startswith("application/json")
        assert json_only.json()["error"]["data"]["errors"] == [{"path": "/params/name", "msg": "approval_unavailable"}]
    assert report_of(tmp_path)["frames"]["server_to_client"].get("tools/call") is None


def test_stateless_requests_that_share_an_id_each_get_their_own_reply(tmp_path: Path, target_forks: list[str]) -> None:
    """Issue 9: under 2026-07-28 one upstream serves every request, and ids never collide."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    async def call(client: httpx.AsyncClient, url: str, tool: str) -> dict[str, Any]:
        headers = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
        params = {"name": tool, "arguments": {}, "_meta": meta}
        return body_of(await client.post(url, json=rpc(7, "tools/call", params), headers=headers))

    async def both(url: str) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=WAIT) as client:
            return list(
                await asyncio.gather(call(client, url, "test_tool_with_logging"), call(client, url, "test_simple_text"))
            )

    with http_gateway(tmp_path, upstream=target_forks) as gateway:
        slow, fast = asyncio.run(both(gateway.url))
        assert len(gateway.children()) == 1
    assert slow["id"] == fast["id"] == 7
    assert slow["result"]["content"][0]["text"] == "Logging tool completed"
    assert fast["result"]["content"][0]["text"] == "This is a simple text response for testing."


def test_an_http_upstream_behind_the_http_front_is_as_invisible(tmp_path: Path) -> None:
    """Issue 9: `--listen http://… --upstream http://…`, one upstream session per client session."""
    port = free_port()
    with running([*TARGET, "--http", str(port)], f"http://127.0.0.1:{port}/mcp", server_env(tmp_path)) as direct_url:
        direct = asyncio.run(asyncio.wait_for(_session(direct_url, "legacy"), WAIT))
        with http_gateway(tmp_path, "--upstream", direct_url) as gateway:
            through = asyncio.run(asyncio.wait_for(_session(gateway.url, "legacy"), WAIT))
    assert through == direct


@pytest.mark.parametrize(
    "options",
    [
        ["--listen", "http://127.0.0.1/mcp"],
        ["--listen", "https://127.0.0.1:8080/mcp"],
        ["--listen", "http://127.0.0.1:99999/mcp"],
        ["--listen", "http://127.0.0.1:80/mcp?x=1"],
        ["--listen", "http://127.0.0.1:0/mcp", "--max-sessions", "0"],
        ["--listen", "http://127.0.0.1:0/mcp", "--idle-timeout", "-1"],
    ],
)
def test_a_bad_listen_url_or_session_limit_exits_2(tmp_path: Path, options: list[str]) -> None:
    """Bad input gets a clear error: --listen must be http://HOST:PORT/PATH, the limits positive."""
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "gateway", *options, "--", *TARGET],
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "mcp:error reason=setup_failed" in result.stderr.decode()


def test_a_server_message_outside_any_request_waits_for_the_get_stream(tmp_path: Path, target_forks: list[str]) -> None:
    """Issue 9 / spec transports: what belongs to no request reaches the client on the GET stream,
    kept until the client opens it."""
    with http_gateway(tmp_path, upstream=target_forks) as gateway, httpx.Client(timeout=WAIT) as client:
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id}
        subscribed = client.post(
            gateway.url, json=rpc(1, "resources/subscribe", {"uri": "test://watched-resource"}), headers=headers
        )
        assert body_of(subscribed) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        stream_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id}
        with client.stream("GET", gateway.url, headers=stream_headers) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    notification = json.loads(line[5:])
                    break
    assert notification["method"] == "notifications/resources/updated"
    assert notification["params"]["uri"] == "test://watched-resource"


def test_sigterm_ends_open_streams_and_every_upstream_and_writes_the_report(tmp_path: Path) -> None:
    """Issue 9 / issue 5: a graceful stop with sessions and GET streams open leaves no upstream behind."""
    with http_gateway(tmp_path) as gateway, httpx.Client(timeout=WAIT) as client:
        sessions = [initialize(client, gateway.url) for _ in range(2)]
        children = gateway.children()
        assert len(children) == 2
        with client.stream("GET", gateway.url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": sessions[0]}):
            gateway.process.send_signal(signal.SIGTERM)
            assert gateway.process.wait(WAIT) == 0
        for child in children:
            wait_gone(child)
    assert report_of(tmp_path)["frames"]["client_to_server"]["initialize"] == 2


def test_a_2026_input_required_result_is_checked_against_2026_and_its_retry_completes(
    tmp_path: Path, target_forks: list[str]
) -> None:
    """Issue 9 / MCP 2026-07-28 (SEP-2322): a stateless request's reply is checked against the
    version the request stated, where `tools/call` may answer with an InputRequiredResult."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    tool = "test_input_required_result_request_state"
    headers = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
    with http_gateway(tmp_path, upstream=target_forks) as gateway, httpx.Client(timeout=WAIT) as client:
        params: dict[str, Any] = {"name": tool, "arguments": {}, "_meta": meta}
        first = body_of(client.post(gateway.url, json=rpc(1, "tools/call", params), headers=headers))
        assert first["result"]["resultType"] == "input_required"
        assert set(first["result"]["inputRequests"]) == {"confirm"}
        retry = {
            **params,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
            "requestState": first["result"]["requestState"],
        }
        second = body_of(client.post(gateway.url, json=rpc(2, "tools/call", retry), headers=headers))
        assert second["result"]["content"][0]["text"] == "state-ok"
    assert report_of(tmp_path)["violations"] == {}


def test_observe_mode_over_http_passes_an_invalid_call_on_and_counts_it(
    tmp_path: Path, target_forks: list[str]
) -> None:
    """Issue 9 / issue 5: observe as on STDIO: the frame passes unchanged, the violation is counted."""
    with (
        http_gateway(tmp_path, "--mode", "observe", upstream=target_forks) as gateway,
        httpx.Client(timeout=WAIT) as client,
    ):
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id}
        client.post(gateway.url, json=rpc(1, "tools/list"), headers=headers)
        call = rpc(2, "tools/call", {"name": "test_sampling", "arguments": {"prompt": 5}})
        reply = body_of(client.post(gateway.url, json=call, headers=headers))
        assert reply["id"] == 2 and reply["result"]["isError"] is True  # the upstream's own refusal
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_input": 1}
    assert report["frames"]["server_to_client"]["tools/call"] == 1


def test_metrics_over_the_gateway_front_count_both_directions_and_upstream_restarts(tmp_path: Path) -> None:
    """Issue 7, Metrics: GET /metrics on the gateway's HTTP front: frames by direction, method and
    status, violations by rule, upstream restarts (each session's upstream after the first)."""
    with http_gateway(tmp_path) as gateway, httpx.Client(timeout=WAIT) as client:
        for _ in range(2):
            session_id = initialize(client, gateway.url)
            bad = rpc(1, "tools/call", {"name": "test_simple_text", "arguments": {"unexpected": 1}})
            client.post(gateway.url, json=bad, headers={**HEADERS, "Mcp-Session-Id": session_id})
        metrics_url = gateway.url.removesuffix("/mcp") + "/metrics"
        deadline = time.monotonic() + WAIT
        answered = 'mcp_frames_total{direction="server_to_client",method="initialize",status="ok"} 2.0'
        while True:  # the log's writer feeds the metrics within its period
            text = client.get(metrics_url).text
            if answered in text or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        refused = client.post(metrics_url, json={}, headers=HEADERS)
    assert 'mcp_frames_total{direction="client_to_server",method="initialize",status="ok"} 2.0' in text
    assert answered in text
    assert "mcp_upstream_restarts_total 1.0" in text
    assert 'mcp_frame_duration_seconds_count{method="initialize"}' in text
    assert_refused(refused, CanonicalError.HTTP_METHOD_NOT_ALLOWED)
