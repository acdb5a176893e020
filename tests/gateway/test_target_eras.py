"""The conformance target serving one protocol era (`--era legacy|modern`, issue 22), the upstreams the
era bridge is tested before: checked with the official SDK client over STDIO and Streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from ..conftest import server_env
from ..processes import free_port, running
from .conformance import WAIT
from .gateways import TARGET

META_2026 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
# How the target is served: over STDIO, over Streamable HTTP, and so with its server requests on the GET stream.
SERVINGS = {"stdio": (), "http": (), "http-standalone": ("--standalone",)}


@contextmanager
def served(tmp_path: Path, serving: str, era: str) -> Iterator[Any]:
    """What `Client` connects to: the target's STDIO command, or the URL it listens at."""
    options = [*SERVINGS[serving], "--era", era]
    if serving == "stdio":
        yield StdioServerParameters(command=TARGET[0], args=[*TARGET[1:], *options], env=server_env(tmp_path))
        return
    port = free_port()
    with running([*TARGET, "--http", str(port), *options], f"http://127.0.0.1:{port}/mcp", server_env(tmp_path)) as url:
        yield url


def leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def session(target: Any, mode: str) -> tuple[str | None, int] | MCPError:
    """(the protocol version in force, how many tools it lists) for a client in ``mode``, or its refusal."""

    async def connect() -> tuple[str | None, int]:
        async with Client(target, mode=mode, read_timeout_seconds=WAIT) as client:
            return client.protocol_version, len((await client.list_tools()).tools)

    try:
        return asyncio.run(asyncio.wait_for(connect(), WAIT))
    except (MCPError, BaseExceptionGroup) as error:
        refusal = leaf(error)
        assert isinstance(refusal, MCPError), repr(refusal)
        return refusal


@pytest.mark.parametrize("serving", SERVINGS)
def test_a_legacy_only_target_serves_a_2025_11_25_client_and_refuses_a_2026_07_28_one(
    tmp_path: Path, serving: str
) -> None:
    """Issue 22: `--era legacy` behaves as a 2025-11-25 server: handshake only (lifecycle, 2025-11-25)."""
    with served(tmp_path, serving, "legacy") as target:
        legacy = session(target, "legacy")
        modern = session(target, "2026-07-28")
        probing = session(target, "auto")  # server/discover refused, so the client falls back to initialize
    assert isinstance(legacy, tuple) and legacy[0] == "2025-11-25" and legacy[1] > 0
    assert probing == legacy
    # Before `initialize`: the SDK's init gate over STDIO, the refusal of a request outside a session over HTTP.
    refused = CanonicalError.INVALID_PARAMS if serving == "stdio" else CanonicalError.NOT_INITIALIZED
    assert isinstance(modern, MCPError) and modern.code == refused.jsonrpc_code


@pytest.mark.parametrize("serving", SERVINGS)
def test_a_modern_only_target_serves_a_2026_07_28_client_and_refuses_a_2025_11_25_one(
    tmp_path: Path, serving: str
) -> None:
    """Issue 22: `--era modern` refuses `initialize` with UnsupportedProtocolVersionError (schema 2026-07-28)."""
    with served(tmp_path, serving, "modern") as target:
        modern = session(target, "2026-07-28")
        probing = session(target, "auto")
        legacy = session(target, "legacy")
    assert isinstance(modern, tuple) and modern[0] == "2026-07-28" and modern[1] > 0
    assert probing == modern
    assert isinstance(legacy, MCPError) and legacy.code == CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.jsonrpc_code
    assert legacy.error.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


def test_a_modern_only_target_refuses_initialize_over_http_with_400(tmp_path: Path) -> None:
    """Issue 22: UnsupportedProtocolVersionError travels with HTTP 400 (schema 2026-07-28, its description)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with served(tmp_path, "http", "modern") as url:
        reply = httpx.post(url, json=initialize, headers=headers, timeout=WAIT)
    assert reply.status_code == CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.http_status
    assert reply.json()["error"]["code"] == CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.jsonrpc_code


def test_a_legacy_only_target_answers_server_discover_with_method_not_found(tmp_path: Path) -> None:
    """Issue 22: a 2025-11-25 server knows no `server/discover` (JSON-RPC 2.0 §5.1: Method not found)."""
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META_2026}}
    done = subprocess.run(
        [*TARGET, "--era", "legacy"],
        input=json.dumps(discover).encode() + b"\n",
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
    )
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["error"]["code"] == CanonicalError.METHOD_NOT_FOUND.jsonrpc_code
