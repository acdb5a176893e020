"""Replies the gateway cannot match by their id, and answers that must not wait (issue 29): the
reference server-everything (npm) over Streamable HTTP and STDIO, the official SDK client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client

from mcp_server.core.errors import CanonicalError

from ..conftest import initialize_frame, server_env
from ..node_tools import SERVER_EVERYTHING, node_command
from ..processes import free_port, running
from .conformance import gateway
from .gateways import Lines

WAIT = 30.0
DISCOVER = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
        }
    },
}


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """server-everything's Streamable HTTP, shared by the module's tests (one session per client)."""
    port = free_port()
    command = [*node_command(SERVER_EVERYTHING, "mcp-server-everything"), "streamableHttp"]
    env = server_env(tmp_path_factory.mktemp("everything"), PORT=str(port))
    with running(command, f"http://127.0.0.1:{port}/mcp", env) as url:
        yield url


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_reply_with_a_null_id_on_a_requests_own_post_answers_that_request(
    tmp_path: Path, everything_http: str, mode: str
) -> None:
    """Issue 29, row 4: server-everything answers `server/discover` before `initialize` with HTTP 400
    and `"id": null` on the request's own POST; that is the request's answer, reported, and the
    client is answered at once (enforce: UPSTREAM_INVALID_REPLY with the upstream's code and message;
    observe: the upstream's error under the request's id). It waited for the 120 s timeout."""
    gateway_run = Lines(tmp_path, "--mode", mode, "--upstream", everything_http)
    try:
        gateway_run.send(DISCOVER)
        reply = gateway_run.reply_to(0)
    finally:
        gateway_run.close()
    error = reply["error"]
    if mode == "enforce":
        assert error["code"] == CanonicalError.UPSTREAM_INVALID_REPLY.jsonrpc_code
        assert error["data"]["code"] == -32000 and error["data"]["message"]
    else:
        assert error["code"] == -32000
    [report] = (tmp_path / "runs").rglob("*-report.json")
    assert sum(json.loads(report.read_text())["violations"].values()) == 1


def test_the_sdk_client_in_its_default_mode_connects_through_the_gateway_as_direct(
    tmp_path: Path, everything_http: str
) -> None:
    """Issue 29, row 4: the official SDK client probes with `server/discover` first; refused, it falls
    back to `initialize` at once, through the gateway as direct (it waited out its timeout)."""

    async def tools(target: Any) -> list[str]:
        async with Client(target, read_timeout_seconds=WAIT * 4) as client:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    with gateway(tmp_path, [], "--upstream", everything_http) as url:
        gated = asyncio.run(asyncio.wait_for(tools(url), WAIT))
    assert gated == asyncio.run(asyncio.wait_for(tools(everything_http), WAIT))


def test_the_first_list_after_initialize_through_an_http_upstream_is_the_whole_list(
    tmp_path: Path, everything_http: str
) -> None:
    """Issue 29, row 5: `notifications/initialized` is acknowledged by the upstream before the next
    request goes; the first `tools/list` was sent on another connection 0.4 ms later and found 12
    tools of 17 in most sessions."""

    async def first_list(target: str) -> int:
        async with Client(target, mode="legacy", read_timeout_seconds=WAIT) as client:
            return len((await client.list_tools()).tools)

    async def sessions(target: str, count: int) -> list[int]:
        return [await first_list(target) for _ in range(count)]

    direct = asyncio.run(asyncio.wait_for(first_list(everything_http), WAIT))
    with gateway(tmp_path, [], "--upstream", everything_http) as url:
        gated = asyncio.run(asyncio.wait_for(sessions(url, 8), WAIT * 2))
    assert gated == [direct] * 8


def test_an_answer_of_the_gateways_own_does_not_wait_behind_a_slow_call(tmp_path: Path) -> None:
    """Issue 29: no head-of-line blocking: an invalid call the gateway answers itself is answered while
    a slow call sent before it is still running (it was held until the slow call's reply)."""
    everything = [*node_command(SERVER_EVERYTHING, "mcp-server-everything"), "stdio"]
    gateway_run = Lines(tmp_path, "--", *everything)
    slow = {"name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 1}}
    invalid = {"name": "get-sum", "arguments": {"a": "two", "b": 3}}
    try:
        gateway_run.send(initialize_frame("2025-11-25", 1))
        gateway_run.reply_to(1)
        gateway_run.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        gateway_run.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        gateway_run.reply_to(2)
        gateway_run.send(
            {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": slow},
            {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": invalid},
        )
        first = gateway_run.reply_to(10, 11)
        second = gateway_run.reply_to(10, 11)
    finally:
        gateway_run.close()
    assert (first["id"], second["id"]) == (11, 10)
    assert first["result"]["isError"] is True and "isError" not in second["result"]
