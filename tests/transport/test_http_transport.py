"""Streamable HTTP: the official SDK client, and raw requests for every refusal (issue 4)."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client

from ..conftest import meta_2026
from ..servers import Running, open_session, post, serving

TIMEOUT = 30.0
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp_path = tmp_path_factory.mktemp("http")
    with serving(tmp_path, ["--http", "127.0.0.1:0"], MCP_ALLOWED_HOSTS="mcp.example.test") as running:
        yield running


@pytest.mark.parametrize(("mode", "expected"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")])
def test_the_official_client_initializes_lists_and_calls_tools_over_http(
    server: Running, mode: str, expected: str
) -> None:
    async def session() -> None:
        async with Client(server.address, mode=mode, read_timeout_seconds=TIMEOUT) as client:
            assert client.protocol_version == expected
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"list_schemas", "validate_asset", "validate_many"} <= names
            good = await client.call_tool(
                "validate_asset", {"asset": {"type": "text", "text": "hi"}, "schema": "TextContent"}
            )
            assert good.is_error is False and good.structured_content == {"ok": True, "errors": []}
            bad = await client.call_tool("validate_asset", {"asset": {"type": "text"}, "schema": "TextContent"})
            assert bad.is_error is True and bad.structured_content["reason"] == "validation_failed"

    asyncio.run(asyncio.wait_for(session(), TIMEOUT))


def test_a_session_id_is_issued_at_initialize_required_after_and_ended_by_delete(server: Running) -> None:
    url = server.address
    session_id = open_session(url)
    listed = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **{"Mcp-Session-Id": session_id})
    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
    assert listed.json()["result"]["tools"]
    without = post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, **{"MCP-Protocol-Version": "2025-11-25"})
    assert without.status_code == 400 and without.json()["error"]["data"]["errors"][0]["msg"] == "not_initialized"
    unknown = post(url, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, **{"Mcp-Session-Id": "f" * 32})
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "Unknown or expired session"
    ended = httpx.delete(url, headers={"Mcp-Session-Id": session_id}, timeout=TIMEOUT)
    assert ended.status_code == 204
    after = post(url, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, **{"Mcp-Session-Id": session_id})
    assert after.status_code == 404
    assert httpx.delete(url, timeout=TIMEOUT).status_code == 400  # no session named


def test_a_protocol_version_header_that_is_not_the_sessions_is_refused(server: Running) -> None:
    session_id = open_session(server.address)
    response = post(
        server.address,
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"},
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == -32020
    same = post(
        server.address,
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"},
    )
    assert same.status_code == 200 and same.json()["result"] == {}


def stateless_call(**params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": meta_2026(**params)}


@pytest.mark.parametrize(
    ("headers", "path"),
    [
        ({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Mcp-Name": "list_schemas"}, "/method"),
        ({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "get_schema"}, "/params/name"),
        ({"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "list_schemas"}, None),
        ({"Mcp-Method": "tools/call", "Mcp-Name": "list_schemas"}, None),
    ],
)
def test_2026_routing_headers_must_match_the_body(server: Running, headers: dict[str, str], path: str | None) -> None:
    """2026-07-28: no sessions; MCP-Protocol-Version, Mcp-Method and Mcp-Name repeat the body (-32020, 400)."""
    response = post(server.address, stateless_call(name="list_schemas", arguments={}), **headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32020 and response.json()["id"] == 7
    if path is not None:
        assert error["data"]["errors"][0]["path"] == path


def test_2026_requests_with_matching_headers_need_no_session(server: Running) -> None:
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "=?base64?bGlzdF9zY2hlbWFz?=",
    }
    response = post(server.address, stateless_call(name="list_schemas", arguments={}), **headers)
    assert response.status_code == 200 and "mcp-session-id" not in response.headers
    assert response.json()["result"]["structuredContent"]["ok"] is True
    assert response.json()["result"]["resultType"] == "complete"


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"Host": "evil.example"}, 403, "Host or Origin not allowed"),
        ({"Origin": "http://evil.example"}, 403, "Host or Origin not allowed"),
        ({"Origin": "null"}, 403, "Host or Origin not allowed"),
        ({"Accept": "text/html"}, 406, "Accept must allow application/json or text/event-stream"),
        ({"Accept": ""}, 406, "Accept must allow application/json or text/event-stream"),
        ({"Content-Type": "text/plain"}, 415, "Content-Type must be application/json"),
        ({"Content-Type": ""}, 415, "Content-Type must be application/json"),
    ],
)
def test_http_refusals_take_their_status_from_the_catalogue(
    server: Running, headers: dict[str, str], status: int, message: str
) -> None:
    response = post(server.address, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, **headers)
    assert response.status_code == status
    assert response.json()["error"]["message"] == message and response.json()["id"] is None


@pytest.mark.parametrize(
    "headers",
    [{"Host": "localhost"}, {"Host": "[::1]:9"}, {"Origin": "http://127.0.0.1:3000"}, {"Host": "mcp.example.test"}],
)
def test_loopback_and_configured_hosts_are_allowed(server: Running, headers: dict[str, str]) -> None:
    response = post(server.address, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, **headers)
    assert response.status_code == 200 and response.json()["result"] == {}


def test_an_event_stream_reply_when_only_sse_is_accepted(server: Running) -> None:
    response = post(server.address, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, Accept="text/event-stream")
    assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
    assert response.text == 'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'


def test_batches_are_rejected(server: Running) -> None:
    response = post(server.address, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert response.status_code == 400
    assert response.json()["error"]["data"]["errors"] == [{"path": "", "msg": "batch_not_supported"}]


def test_an_oversized_body_is_refused_by_its_declared_length_without_reading_it(server: Running) -> None:
    """Content-Length over the cap: 413 before the body arrives (the client never sends it)."""
    host, port = server.address.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as raw:
        raw.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n"
        )
        received = b""
        while b'"Payload too large"' not in received:  # the head and the body may arrive apart
            chunk = raw.recv(65536)
            if not chunk:
                break
            received += chunk
    assert received.startswith(b"HTTP/1.1 413 ")
    assert b'"Payload too large"' in received


def test_an_oversized_chunked_body_is_refused_as_it_streams(server: Running) -> None:
    def body() -> Iterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
        for _ in range(40):
            yield b"x" * 65536

    response = httpx.post(server.address, content=body(), headers=HEADERS, timeout=TIMEOUT)
    assert response.status_code == 413 and response.json()["error"]["message"] == "Payload too large"


def test_get_on_mcp_is_not_offered_and_health_lists_the_versions(server: Running) -> None:
    assert httpx.get(server.address, headers=HEADERS, timeout=TIMEOUT).status_code == 405
    health = httpx.get(server.address.replace("/mcp", "/health"), timeout=TIMEOUT)
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert health.json()["versions"] == ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
    assert httpx.get(server.address.replace("/mcp", "/nowhere"), timeout=TIMEOUT).status_code == 404


def test_sigterm_stops_the_http_server_and_removes_the_ready_file(tmp_path: Path) -> None:
    with serving(tmp_path, ["--http", "127.0.0.1:0"]) as running:
        assert post(running.address, {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 200
        assert running.stop(signal.SIGTERM) == 0
        assert not running.ready_file.exists()
        assert "mcp:shutdown mode=http" in running.stderr()
        assert f"mcp:ready mode=http url={running.address} schemas_dir=" in running.stderr()


@pytest.mark.parametrize(
    ("args", "env", "fragment"),
    [
        (["--http", "nonsense"], {}, "--http must be HOST:PORT"),
        (["--http", "127.0.0.1:70000"], {}, "--http must be HOST:PORT"),
        ([], {"MCP_ENDPOINT": "http", "MCP_HTTP_PORT": "eighty"}, "MCP_HTTP_HOST:MCP_HTTP_PORT must be HOST:PORT"),
        ([], {"MCP_ENDPOINT": "http", "MCP_MAX_SESSIONS": "0"}, "MCP_MAX_SESSIONS must be a positive integer"),
    ],
)
def test_bad_http_settings_exit_2(tmp_path: Path, args: list[str], env: dict[str, str], fragment: str) -> None:
    import subprocess

    from ..conftest import server_command, server_env

    process = subprocess.run(
        [*server_command(), *args], capture_output=True, timeout=TIMEOUT, env=server_env(tmp_path, **env)
    )
    assert process.returncode == 2 and process.stdout == b""
    assert f"mcp:error reason=setup_failed detail={fragment}" in process.stderr.decode()
    assert b"Traceback" not in process.stderr


def test_a_port_in_use_is_a_setup_error(tmp_path: Path) -> None:
    import subprocess

    from ..conftest import server_command, server_env

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        process = subprocess.run(
            [*server_command(), "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            timeout=TIMEOUT,
            env=server_env(tmp_path),
        )
    assert process.returncode == 2
    assert f"detail=cannot listen on 127.0.0.1:{port}" in process.stderr.decode()
