"""Frame limits per direction (issue 29): what a real server returns reaches its client; a frame over
its limit, from either side, is answered to the side that waits, by the request's id.

The server is `@modelcontextprotocol/server-filesystem` (npm), the client the official Python SDK's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError
from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES

from ..conftest import server_env
from ..node_tools import SERVER_FILESYSTEM, node_command

WAIT = 60.0


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder the filesystem server may read and write, with a 600 KB text file in it."""
    folder = tmp_path_factory.mktemp("files")
    (folder / "big.txt").write_text(("0123456789abcdef" * 64 + "\n") * 585)  # 600,210 bytes
    yield folder


def filesystem(folder: Path) -> list[str]:
    return [*node_command(SERVER_FILESYSTEM, "mcp-server-filesystem"), str(folder)]


def through_gateway(upstream: list[str], *options: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server", "gateway", *options, "--", *upstream]


def call(tmp_path: Path, command: list[str], tool: str, arguments: dict[str, Any], **env: str) -> Any:
    """``tool`` called once by the official SDK client over STDIO: its result, or the ``MCPError``."""
    target = StdioServerParameters(command=command[0], args=command[1:], env=server_env(tmp_path, **env))

    async def run() -> Any:
        async with Client(target, mode="legacy", read_timeout_seconds=WAIT) as client:
            try:
                return (await client.call_tool(tool, arguments)).model_dump(mode="json", exclude_none=True)
            except MCPError as error:
                return error

    return asyncio.run(asyncio.wait_for(run(), WAIT * 2))


def events(runs: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in runs.rglob("*.jsonl") for line in path.read_text().splitlines() if line]


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_600_kb_file_read_reaches_the_client_through_the_gateway_as_direct(
    tmp_path: Path, files: Path, mode: str
) -> None:
    """Issue 29, row 1: server-filesystem's 1.2 MB result (content and structuredContent) is valid and
    within the server side's default limit: the client gets exactly what it gets direct."""
    arguments = {"path": str(files / "big.txt")}
    direct = call(tmp_path, filesystem(files), "read_text_file", arguments)
    gated = call(tmp_path, through_gateway(filesystem(files), "--mode", mode), "read_text_file", arguments)
    assert isinstance(direct, dict) and len(json.dumps(direct)) > DEFAULT_MAX_FRAME_BYTES
    assert gated == direct


def test_a_reply_over_the_server_limit_is_answered_to_the_client_by_its_id(tmp_path: Path, files: Path) -> None:
    """Issue 29: a reply over its limit is answered to the client that waits, by its request's id, as
    a catalogued error naming the size and the limit (not held until a retryable timeout)."""
    limit = 200_000
    command = through_gateway(filesystem(files), "--max-server-frame-bytes", str(limit))
    answer = call(tmp_path, command, "read_text_file", {"path": str(files / "big.txt")}, MCP_RUNS_DIR=str(tmp_path))
    assert isinstance(answer, MCPError), answer
    assert answer.code == CanonicalError.REPLY_TOO_LARGE.jsonrpc_code
    data = answer.error.data
    assert data["rule"] == CanonicalError.PAYLOAD_TOO_LARGE.slug
    assert data["limit"] == limit and data["size"] > limit
    # Nothing went to the server for it: an error with ``id: null`` was sent upstream before.
    sent_up = [e for e in events(tmp_path) if e.get("direction") == "client_to_server" and e.get("event") == "frame"]
    assert all(e.get("request_id") is not None or e.get("method") for e in sent_up)


def test_observe_mode_relays_a_reply_over_the_limit_and_reports_it(tmp_path: Path, files: Path) -> None:
    """Issue 29: observe mode relays what it does not check (a frame over its limit) and reports it."""
    arguments = {"path": str(files / "big.txt")}
    direct = call(tmp_path, filesystem(files), "read_text_file", arguments)
    command = through_gateway(filesystem(files), "--mode", "observe", "--max-server-frame-bytes", "200000")
    gated = call(tmp_path, command, "read_text_file", arguments, MCP_RUNS_DIR=str(tmp_path))
    assert gated == direct
    [report] = tmp_path.rglob("*-report.json")
    assert json.loads(report.read_text())["violations"] == {CanonicalError.PAYLOAD_TOO_LARGE.slug: 1}


def test_a_write_over_the_client_limit_is_answered_by_the_request_id(tmp_path: Path, files: Path) -> None:
    """Issue 29, row 2: `write_file` of 1.2 MB is over the client side's 1 MiB: the client gets an
    answer with its request's id (PAYLOAD_TOO_LARGE naming size and limit), the call does not hang."""
    content = "x" * 1_200_000
    command = through_gateway(filesystem(files))
    answer = call(tmp_path, command, "write_file", {"path": str(files / "written.txt"), "content": content})
    assert isinstance(answer, MCPError), answer
    assert answer.code == CanonicalError.PAYLOAD_TOO_LARGE.jsonrpc_code
    assert answer.error.data["limit"] == DEFAULT_MAX_FRAME_BYTES and answer.error.data["size"] > 1_200_000
    assert not (files / "written.txt").exists()
