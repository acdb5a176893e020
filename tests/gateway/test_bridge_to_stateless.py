"""`mcp-server gateway --bridge 2026-07-28` (issue 22): handshake-era clients (the official SDK in
legacy mode, and a raw NDJSON client) to an upstream that speaks the stateless protocol, over a
STDIO or HTTP front, with the upstream as a child process or over Streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, initialize_frame, meta_2026, server_env
from ..transport.test_http_status_by_version import sdk_session
from .test_gateway import SDK_UPSTREAM, Peer, gateway_command, report_of
from .test_gateway_conformance import TARGET, free_port, running
from .test_gateway_http import http_gateway
from .test_gateway_policy import APPROVAL_POLICY, approve_then_refuse

WAIT = 60.0
BRIDGE = ("--bridge", "2026-07-28")
SCRIPTED = [sys.executable, str(ROOT / "tests" / "upstreams" / "scripted_server.py")]


def stdio_front(tmp_path: Path, *options: str, upstream: list[str] = TARGET) -> StdioServerParameters:
    """The bridging gateway on STDIO, as the SDK client starts it."""
    command = gateway_command(*BRIDGE, *options, upstream=upstream)
    if "--upstream" in options:
        command = command[: command.index("--")]
    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


@contextmanager
def http_upstream(tmp_path: Path, command: list[str] = TARGET) -> Iterator[str]:
    """The SDK server of ``command`` over Streamable HTTP on loopback: its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*command, "--http", str(port)], url, server_env(tmp_path)) as served:
        yield served


@contextmanager
def front(tmp_path: Path, kind: str, upstream: str) -> Iterator[StdioServerParameters | str]:
    """The bridge on a ``kind`` front (stdio, http) before the target as a ``upstream`` (stdio, http)."""
    with ExitStack() as stack:
        options: tuple[str, ...] = ()
        if upstream == "http":
            options = ("--upstream", stack.enter_context(http_upstream(tmp_path)))
        if kind == "stdio":
            yield stdio_front(tmp_path, *options)
        else:
            yield stack.enter_context(http_gateway(tmp_path, *BRIDGE, *options)).url


async def _tour(client: Client) -> None:
    """Tools, resources and prompts of the target, as a client of the handshake era uses them."""
    assert client.protocol_version == "2025-11-25"
    tools = await client.list_tools()
    assert "test_simple_text" in {tool.name for tool in tools.tools}
    called = await client.call_tool("test_simple_text", {})
    assert called.content[0].text == "This is a simple text response for testing."
    resources = await client.list_resources()
    assert "test://static-text" in {str(resource.uri) for resource in resources.resources}
    read = await client.read_resource("test://static-text")
    assert read.contents[0].text
    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert prompt.messages


@pytest.mark.parametrize(("kind", "upstream"), [("stdio", "stdio"), ("stdio", "http"), ("http", "stdio"), ("http", "http")])
def test_a_legacy_client_uses_tools_resources_and_prompts_of_a_stateless_upstream(
    tmp_path: Path, kind: str, upstream: str
) -> None:
    """Issue 22: a 2025-11-25 client to a 2026-07-28 upstream: the gateway holds the session it expects."""

    async def session(server: StdioServerParameters | str) -> None:
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT) as client:
            await _tour(client)

    with front(tmp_path, kind, upstream) as server:
        asyncio.run(asyncio.wait_for(session(server), WAIT))
