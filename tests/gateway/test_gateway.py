"""`mcp-server gateway` in front of real upstreams, with real clients (issue 5). Where a test is not
about the upstream's process, the SDK server is imported once and forked per session (`sdk_forks`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from ..conftest import initialize_frame, meta_2026, server_env
from ..processes import children_of
from .gateways import (
    BROKEN_UPSTREAM,
    SDK_UPSTREAM,
    WAIT,
    Peer,
    gateway_command,
    handshake,
    report_of,
    started_gateway,
)


def _pipe_full(fd: int) -> bool:
    """Whether the pipe ``fd`` writes to has no room for another write (poll says it is not writable)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return not poller.poll(0)


def _upstream_stdin_full(gateway: int) -> bool:
    """Whether the gateway's upstream has a full pipe on its stdin (it reads nothing)."""
    for child in children_of(gateway, upstreams_only=True):
        with contextlib.suppress(OSError):
            fd = os.open(f"/proc/{child}/fd/0", os.O_WRONLY | os.O_NONBLOCK)  # another writer of that pipe
            try:
                return _pipe_full(fd)
            finally:
                os.close(fd)
    return False


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_valid_traffic_passes_byte_for_byte_and_the_report_is_clean(
    tmp_path: Path, sdk_forks: list[str], version: str
) -> None:
    """Issue 5: valid frames are forwarded unchanged; zero violations on a clean session."""
    peer = Peer(tmp_path, upstream=sdk_forks)
    assert handshake(peer, version)["result"]["protocolVersion"] == version
    listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert {tool["name"] for tool in listed["result"]["tools"]} == {"add", "echo", "fail"}
    added = peer.call(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}
    )
    assert added["result"]["structuredContent"] == {"total": 5}
    failed = peer.call(
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "fail", "arguments": {"reason": "no"}}}
    )
    assert failed["result"]["isError"] is True
    status, stderr = peer.finish()
    assert status == 0, stderr
    report = report_of(tmp_path)
    assert report["violations"] == {}
    assert report["protocol_version"] == version
    assert report["frames"]["client_to_server"]["tools/call"] == 2
    assert report["frames"]["server_to_client"]["tools/call"] == 2


def test_invalid_arguments_never_reach_the_upstream_in_enforce_mode(tmp_path: Path, sdk_forks: list[str]) -> None:
    """Issue 5: on 2025-11-25 a tool result with isError and the violations; -32602 before."""
    peer = Peer(tmp_path, upstream=sdk_forks)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    bad = peer.call(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": "two", "b": 3}},
        }
    )
    assert bad["result"]["isError"] is True
    # `add` declares an outputSchema the violations are not valid for: they travel as text (issue 29).
    assert "structuredContent" not in bad["result"]
    [error] = json.loads(bad["result"]["content"][0]["text"])["errors"]
    assert error["path"] == "/a" and error["keyword"] == "type" and error["schemaPath"]
    peer.finish()
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_input": 1}
    assert report["violations_by_tool"] == {"invalid_tool_input": {"add": 1}}
    assert "tools/call" not in report["frames"].get("server_to_client", {})  # the upstream never answered one


def test_invalid_arguments_before_2025_11_25_are_invalid_params(tmp_path: Path, sdk_forks: list[str]) -> None:
    """Issue 5 / MCP 2025-06-18: invalid tool arguments are a -32602 protocol error."""
    peer = Peer(tmp_path, upstream=sdk_forks)
    handshake(peer, "2025-06-18")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    bad = peer.call(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}}
    )
    assert bad["error"]["code"] == -32602
    assert bad["error"]["data"]["errors"][0]["keyword"] == "required"
    peer.finish()


def test_observe_mode_passes_everything_and_only_counts(tmp_path: Path, sdk_forks: list[str]) -> None:
    """Issue 5: observe: every frame passes unchanged; violations are logged and counted."""
    peer = Peer(tmp_path, "--mode", "observe", upstream=sdk_forks)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    reply = peer.call(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": "two", "b": 3}},
        }
    )
    # The upstream itself refused it: the gateway let it through.
    assert reply["result"]["isError"] is True
    assert "structuredContent" not in reply["result"] or "errors" not in reply["result"]["structuredContent"]
    _, stderr = peer.finish()
    assert report_of(tmp_path)["violations"] == {"invalid_tool_input": 1}
    assert '"action":"observed"' in stderr


def test_the_broken_upstream_is_caught_rule_by_rule(tmp_path: Path) -> None:
    """Issue 5: invalid result, wrong structuredContent, unknown id, stdout junk, schema change, death."""
    peer = Peer(tmp_path, upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert "badschema" not in names and "strict" in names  # dropped: its schema could not be compiled

    def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
        return peer.call(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )

    bad = call(3, "bad_result")
    assert bad["id"] == 3 and bad["error"]["data"]["rule"] == "invalid_params"
    assert bad["error"]["data"]["errors"][0]["path"].startswith("/result/content")
    wrong = call(4, "wrong_structured")
    assert wrong["error"]["data"]["rule"] == "invalid_tool_output"
    assert wrong["error"]["data"]["errors"][0]["path"] == "/result/structuredContent/n"
    junk = call(5, "junk")
    assert junk["result"]["content"][0]["text"] == "ok"  # the stray line was quarantined, the reply delivered
    relisted = peer.call({"jsonrpc": "2.0", "id": 6, "method": "tools/list"})
    assert "result" in relisted
    peer.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "unknown_id", "arguments": {}}})
    peer.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "die", "arguments": {}}})
    replies = {peer.receive()["id"]: None for _ in range(2)}
    assert set(replies) == {7, 8}  # both pending requests are answered when the upstream dies
    status, _stderr = peer.finish()
    assert status != 0
    report = report_of(tmp_path)
    assert report["violations"]["invalid_params"] == 1
    assert report["violations"]["invalid_tool_output"] == 1
    assert report["violations"]["unknown_response_id"] == 1
    assert report["violations"]["upstream_stdout_pollution"] == 1
    assert report["violations"]["invalid_tool_schema"] == 2  # once per list that carries it
    assert report["violations"]["upstream_unavailable"] == 2
    [changed] = report["examples"]["tool_definition_changed"]
    assert changed["tool"] == "wrong_structured"
    assert changed["patch"] and all(op["op"] in ("add", "remove", "replace") for op in changed["patch"])
    assert "DEBUG: this print()" in report["examples"]["upstream_stdout_pollution"][0]["excerpt"]


def test_a_client_that_disconnects_ends_the_upstream_without_zombies(tmp_path: Path) -> None:
    """Issue 5: a client that disconnects ends the upstream; no zombie processes (nor the log's writer)."""
    peer = Peer(tmp_path)
    handshake(peer, "2025-11-25")
    children = Path(f"/proc/{peer.process.pid}/task/{peer.process.pid}/children").read_text().split()
    commands = sorted(Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[1] for child in children)
    assert commands == [b"-m", SDK_UPSTREAM[1].encode()], commands  # the log's writer, and the upstream
    status, _ = peer.finish()
    assert status == 0
    deadline = time.monotonic() + WAIT
    for child in children:
        while Path(f"/proc/{child}").exists():
            stat = Path(f"/proc/{child}/stat").read_text()
            assert time.monotonic() < deadline, f"child still there: {stat}"
            time.sleep(0.02)


def test_sigterm_stops_the_gateway_and_its_upstream_and_writes_the_report(tmp_path: Path) -> None:
    """Issue 5: the report is written on exit; the upstream is ended."""
    peer = Peer(tmp_path)
    handshake(peer, "2025-11-25")
    peer.process.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + WAIT
    while not list((tmp_path / "runs").rglob("*-report.json")):
        assert time.monotonic() < deadline, "SIGUSR1 wrote no report"
        time.sleep(0.02)
    peer.process.send_signal(signal.SIGTERM)
    status, stderr = peer.finish()
    assert status == 0
    assert "conformance report:" in stderr


def test_mcp_server_report_prints_a_written_report_again(tmp_path: Path, sdk_forks: list[str]) -> None:
    """Issue 5: `mcp-server report FILE` prints it again."""
    peer = Peer(tmp_path, upstream=sdk_forks)
    handshake(peer, "2025-11-25")
    peer.finish()
    [path] = sorted((tmp_path / "runs").rglob("*-report.json"))
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "report", str(path)],
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
    )
    assert result.returncode == 0
    assert result.stdout.decode().startswith("conformance report:")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "report", str(broken)],
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
    )
    assert result.returncode == 2 and b"Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ('{"mode": "sometimes"}', "/mode"),
        ('{"tools": {"add": {"mode": 1}}}', "/tools/add/mode"),
        ("{not json", "not valid"),
    ],
)
def test_a_bad_config_file_exits_2_naming_the_pointer(tmp_path: Path, config: str, fragment: str) -> None:
    """Bad input gets a clear error: the gateway config is validated against its schema."""
    path = tmp_path / "gateway.json"
    path.write_text(config)
    result = subprocess.run(
        gateway_command("--config", str(path)),
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "mcp:error reason=setup_failed" in result.stderr.decode() and fragment in result.stderr.decode()


def test_a_missing_upstream_command_exits_2(tmp_path: Path) -> None:
    """Bad input gets a clear error: an upstream that cannot be started."""
    result = subprocess.run(
        gateway_command(upstream=[str(tmp_path / "no-such-server")]),
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "cannot start upstream" in result.stderr.decode()


def test_a_tool_catalogue_in_the_environment_is_for_serve_not_the_gateway(tmp_path: Path) -> None:
    """The gateway's tools are its upstream's: a serve-only `MCP_HTTP_TOOLS_FILE` (here with no
    `MCP_EXECUTION_BASE_URL`, which would stop `serve`) neither stops the gateway nor adds a tool."""
    catalogue = tmp_path / "tools.json"
    catalogue.write_text('{"tools": [{"name": "not_here"}]}')
    serve = subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve"],
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path, MCP_HTTP_TOOLS_FILE=str(catalogue)),
        stdin=subprocess.DEVNULL,
    )
    assert serve.returncode == 2, "serve must refuse this environment, or the test shows nothing"
    peer = Peer(tmp_path, env_extra={"MCP_HTTP_TOOLS_FILE": str(catalogue)})
    handshake(peer, "2025-11-25")
    listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert {tool["name"] for tool in listed["result"]["tools"]} == {"add", "echo", "fail"}
    status, stderr = peer.finish()
    assert status == 0, stderr


@pytest.mark.parametrize(("mode", "expected"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")])
def test_the_official_client_cannot_tell_the_gateway_from_the_upstream(
    tmp_path: Path, mode: str, expected: str
) -> None:
    """Issue 5: same results through the gateway as direct, on valid traffic."""

    async def session(command: list[str]) -> list[Any]:
        parameters = StdioServerParameters(
            command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
        )
        async with Client(parameters, mode=mode, read_timeout_seconds=WAIT) as client:
            assert client.protocol_version == expected
            listed = await client.list_tools()
            added = await client.call_tool("add", {"a": 20, "b": 22})
            echoed = await client.call_tool("echo", {"text": "hé"})
            return [
                sorted(tool.name for tool in listed.tools),
                added.structured_content,
                added.is_error,
                echoed.structured_content,
                [c.text for c in echoed.content],
            ]

    direct = asyncio.run(asyncio.wait_for(session(SDK_UPSTREAM), WAIT))
    through = asyncio.run(asyncio.wait_for(session(gateway_command()), WAIT))
    assert through == direct
    assert direct[1] == {"total": 42}
    assert report_of(tmp_path)["violations"] == {}


def test_a_2026_request_through_the_gateway_is_checked_against_2026(tmp_path: Path, sdk_forks: list[str]) -> None:
    """Issue 5: the version in force is taken per request from _meta under 2026-07-28."""
    peer = Peer(tmp_path, upstream=sdk_forks)
    missing_capabilities = meta_2026(name="add", arguments={"a": 1, "b": 2})
    del missing_capabilities["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    reply = peer.call({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": missing_capabilities})
    assert reply["error"]["code"] == -32602
    peer.finish()
    assert report_of(tmp_path)["violations"] == {"invalid_request_meta": 1}  # its envelope: HTTP 400
    assert os.path.isdir(tmp_path / "runs")


@pytest.fixture(params=["sse", "json"])
def http_upstream(request: pytest.FixtureRequest) -> Any:
    """The SDK upstream served over Streamable HTTP on 127.0.0.1 (SSE or JSON replies)."""

    from ..processes import free_port, wait_listening

    port = free_port()
    extra = ["json"] if request.param == "json" else []
    process = subprocess.Popen([*SDK_UPSTREAM, "http", str(port), *extra], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    wait_listening(process, url)
    yield url
    process.terminate()
    process.wait(WAIT)


@pytest.mark.parametrize(("mode", "expected"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")])
def test_an_http_upstream_behind_the_gateway_gives_the_client_the_same_results(
    tmp_path: Path, http_upstream: str, mode: str, expected: str
) -> None:
    """Issue 5: `--upstream http://...` (SSE and JSON replies) is as invisible as a STDIO upstream."""

    async def session(target: Any) -> list[Any]:
        async with Client(target, mode=mode, read_timeout_seconds=WAIT) as client:
            assert client.protocol_version == expected
            listed = await client.list_tools()
            added = await client.call_tool("add", {"a": 20, "b": 22})
            failed = await client.call_tool("fail", {"reason": "no"})
            return [sorted(t.name for t in listed.tools), added.structured_content, failed.is_error]

    direct = asyncio.run(asyncio.wait_for(session(http_upstream), WAIT))
    command = [sys.executable, "-m", "mcp_server", "gateway", "--upstream", http_upstream]
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    )
    through = asyncio.run(asyncio.wait_for(session(parameters), WAIT))
    assert through == direct == [["add", "echo", "fail"], {"total": 42}, True]
    assert report_of(tmp_path)["violations"] == {}


def test_invalid_arguments_never_reach_an_http_upstream(tmp_path: Path, http_upstream: str) -> None:
    peer = Peer.__new__(Peer)
    peer.process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "gateway", "--upstream", http_upstream],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
    )
    handshake(peer, "2025-11-25")
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    reply = peer.call(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": "x"}}}
    )
    assert reply["result"]["isError"] is True
    status, _ = peer.finish()
    assert status == 0
    assert report_of(tmp_path)["violations"] == {"invalid_tool_input": 1}


def test_a_unix_socket_front_gives_each_connection_its_own_upstream(tmp_path: Path) -> None:
    """Issue 5: `--listen unix:PATH`; a STDIO server serves one client, so each connection gets one."""
    import socket as sockets

    path, errors = tmp_path / "gw" / "gateway.sock", tmp_path / "gateway.err"

    def connect() -> tuple[sockets.socket, Any]:
        client = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        client.settimeout(WAIT)
        client.connect(str(path))
        return client, client.makefile("rb")

    def call(conn: tuple[sockets.socket, Any], frame: dict[str, Any]) -> dict[str, Any]:
        conn[0].sendall(json.dumps(frame).encode() + b"\n")
        return json.loads(conn[1].readline())

    # Connected once it says it is ready (the socket's file exists from its bind on, before it listens).
    with started_gateway(tmp_path, f"--listen=unix:{path}", "--", *SDK_UPSTREAM, stderr=errors) as (process, _):
        first, second = connect(), connect()
        for conn in (first, second):  # each connection runs its own handshake with its own upstream
            assert call(conn, initialize_frame("2025-11-25", 1))["result"]["protocolVersion"] == "2025-11-25"
            conn[0].sendall(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            assert call(conn, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
        arguments = {"a": 1, "b": 2}
        added = call(
            first,
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": arguments}},
        )
        assert added["result"]["structuredContent"] == {"total": 3}
        arguments = {"a": "x"}
        refused = call(
            second,
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": arguments}},
        )
        assert refused["result"]["isError"] is True
        children = children_of(process.pid, upstreams_only=True)
        assert len(children) == 2
        first[0].close()
        second[0].close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0, errors.read_text()
    assert f"mcp:ready mode=gateway listen=unix:{path}" in errors.read_text()
    assert not path.exists()
    for child in children:
        assert not os.path.exists(f"/proc/{child}"), "an upstream was left behind"
    assert report_of(tmp_path)["violations"] == {"invalid_tool_input": 1}


def test_a_bad_listen_value_exits_2(tmp_path: Path) -> None:
    process = subprocess.run(
        gateway_command("--listen", "tcp:9"), capture_output=True, timeout=WAIT, env=server_env(tmp_path)
    )
    assert process.returncode == 2
    assert "mcp:error reason=setup_failed detail=--listen must be stdio, unix:PATH or http" in process.stderr.decode()


def test_a_bridge_to_an_unknown_protocol_version_exits_2_naming_the_known_ones(tmp_path: Path) -> None:
    """Issue 22: `--bridge VERSION` names the upstream's version; one the gateway has no schema of is
    a setup error, said in one line with the versions it knows, before anything starts."""
    process = subprocess.run(
        gateway_command("--bridge", "2099-01-01"), capture_output=True, timeout=WAIT, env=server_env(tmp_path)
    )
    assert process.returncode == 2
    said = process.stderr.decode()
    assert "reason=setup_failed detail=--bridge: unknown protocol version '2099-01-01'" in said
    assert "2025-11-25" in said and "2026-07-28" in said and "Traceback" not in said


def test_an_upstream_that_stops_reading_makes_the_gateway_stop_reading_not_buffer(tmp_path: Path) -> None:
    """Issue 5: backpressure. An upstream that never reads its stdin: the gateway holds a bounded
    amount, then stops taking frames from the client (its writes block), with flat memory."""
    import threading

    stalled = [sys.executable, "-c", "import time; time.sleep(120)"]
    process = subprocess.Popen(
        gateway_command("--mode", "observe", upstream=stalled),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
    )
    frame = (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "t", "progress": 1, "message": "x" * 4000},
            }
        ).encode()
        + b"\n"
    )
    written = [0]

    def flood() -> None:
        assert process.stdin is not None
        try:
            for _ in range(50_000):  # 200 MB if nothing pushed back
                process.stdin.write(frame)
                written[0] += len(frame)
        except (BrokenPipeError, ValueError):
            pass

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    assert process.stdin is not None
    deadline = time.monotonic() + WAIT
    while not (_pipe_full(process.stdin.fileno()) and _upstream_stdin_full(process.pid)):
        assert writer.is_alive(), "the whole flood was taken although the upstream took nothing"
        assert time.monotonic() < deadline, "the pipes never filled"
        time.sleep(0.02)
    # Both pipes full: the upstream takes nothing and the gateway takes no more from the client.
    assert writer.is_alive() and written[0] < 16 * 1024 * 1024  # pipes and bounded buffers only
    rss_kib = int(
        next(
            line.split()[1]
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines()
            if line.startswith("VmRSS")
        )
    )
    assert rss_kib < 120 * 1024
    children = children_of(process.pid)
    process.kill()
    process.wait(WAIT)
    writer.join(WAIT)
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(child), signal.SIGKILL)
