"""`mcp-server wrap CONFIG.json`: an MCP client's configuration put behind the gateway (issue 23), each
rewritten entry started as the client would start it, with the official SDK's STDIO client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from ..conftest import ROOT, cli, server_env
from ..processes import free_port, running

WAIT = 30.0
SDK_SERVER = str(ROOT / "tests" / "upstreams" / "sdk_server.py")


def wrap(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(tmp_path, "wrap", *args, env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "client-runs")), wait=WAIT)


def client_config(shape: str, url: str) -> dict[str, Any]:
    """A client's configuration as Claude Desktop / Cursor (``mcpServers``) or VS Code (``servers``) write it."""
    local = {"command": sys.executable, "args": [SDK_SERVER], "env": {"SDK_UPSTREAM_MARK": "kept"}}
    if shape == "servers":
        return {"servers": {"local": {"type": "stdio", **local}, "remote": {"type": "http", "url": url}}, "inputs": []}
    return {"mcpServers": {"local": local, "remote": {"url": url}}}


async def _add_through(entry: dict[str, Any], cwd: Path) -> Any:
    parameters = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"), cwd=cwd)
    async with Client(parameters, mode="legacy", read_timeout_seconds=WAIT) as client:
        added = await client.call_tool("add", {"a": 20, "b": 22})
        return added.structured_content


@pytest.mark.parametrize("shape", ["mcpServers", "servers"])
def test_every_rewritten_entry_runs_behind_the_gateway_and_completes_a_tool_call(tmp_path: Path, shape: str) -> None:
    """Issue 23: `wrap` puts each server (a command, a Streamable HTTP URL) behind `mcp-server gateway`;
    a client starting the rewritten entry completes a tool call through it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "client.json"
    original = json.dumps(client_config(shape, url), indent=2).encode()
    config.write_bytes(original)
    with running([sys.executable, SDK_SERVER, "http", str(port)], url, server_env(tmp_path)):
        wrapped = wrap(tmp_path, str(config))
        assert wrapped.returncode == 0, wrapped.stderr
        servers = json.loads(config.read_text())[shape]
        assert config.with_name("client.json.bak").read_bytes() == original
        assert servers["local"]["args"] == ["gateway", "--", sys.executable, SDK_SERVER]
        # The client's own env is kept; the gateway's log goes to an absolute folder, whatever the
        # client's working directory.
        runs = str(tmp_path / "client-runs")
        assert servers["local"]["env"] == {"SDK_UPSTREAM_MARK": "kept", "MCP_RUNS_DIR": runs}
        assert servers["remote"]["env"] == {"MCP_RUNS_DIR": runs}
        assert servers["remote"]["args"] == ["gateway", "--upstream", url]
        assert "url" not in servers["remote"]
        cwd = tmp_path / "client-cwd"  # the client's working directory: the log is not written there
        cwd.mkdir()
        for entry in servers.values():
            assert Path(entry["command"]).name == "mcp-server"
            assert asyncio.run(_add_through(entry, cwd)) == {"total": 42}
        assert len(list((tmp_path / "client-runs" / "mcp_server" / "gateway").glob("*-report.json"))) == 2
        assert not (cwd / "runs").exists()


def test_wrapping_twice_changes_nothing_and_undo_restores_the_original_bytes(tmp_path: Path) -> None:
    """Issue 23: an entry already behind the gateway is left alone; `--undo` restores the backup."""
    config = tmp_path / "claude_desktop_config.json"
    original = json.dumps(client_config("mcpServers", "http://127.0.0.1:9/mcp")).encode()
    config.write_bytes(original)
    assert wrap(tmp_path, str(config)).returncode == 0
    once = config.read_bytes()
    again = wrap(tmp_path, str(config))
    assert again.returncode == 0, again.stderr
    assert config.read_bytes() == once
    assert "already behind the gateway" in again.stdout
    undone = wrap(tmp_path, "--undo", str(config))
    assert undone.returncode == 0, undone.stderr
    assert config.read_bytes() == original
    assert not config.with_name(config.name + ".bak").exists()


def _refused(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "mcp:error reason=setup_failed" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "content",
    [
        b'{"mcpServers": {"a": {"command": "x",}}}',  # not JSON
        b'{"servers": []}',  # servers that are no object
        b'{"profiles": {}}',  # no servers at all
        b'{"mcpServers": {"a": {"cwd": "/"}}}',  # an entry with neither command nor url
        b'{"mcpServers": {"a": {"command": "x", "args": "-v"}}}',  # args that are no list
        b"[]",
    ],
)
def test_a_config_it_cannot_read_whole_exits_2_and_is_left_untouched(tmp_path: Path, content: bytes) -> None:
    """Issue 23: malformed JSON or an unknown shape is a clear error, and the file loses nothing."""
    config = tmp_path / "mcp.json"
    config.write_bytes(content)
    _refused(wrap(tmp_path, str(config)))
    assert config.read_bytes() == content
    assert not config.with_name("mcp.json.bak").exists()


def test_a_missing_file_or_backup_exits_2(tmp_path: Path) -> None:
    """Issue 23: nothing to wrap or to undo is a clear error, no traceback."""
    _refused(wrap(tmp_path, str(tmp_path / "absent.json")))
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    _refused(wrap(tmp_path, "--undo", str(config)))


def test_an_existing_backup_is_never_overwritten(tmp_path: Path) -> None:
    """Issue 23: the backup of the original is never overwritten silently."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(client_config("mcpServers", "http://127.0.0.1:9/mcp")))
    before = config.read_bytes()
    backup = config.with_name("mcp.json.bak")
    backup.write_text("an earlier original")
    _refused(wrap(tmp_path, str(config)))
    assert config.read_bytes() == before
    assert backup.read_text() == "an earlier original"


def test_undo_refuses_to_lose_a_change_made_after_the_wrap(tmp_path: Path) -> None:
    """Issue 23: `--undo` would drop what the client wrote since; it says so, and `--force` restores."""
    config = tmp_path / "mcp.json"
    original = json.dumps(client_config("mcpServers", "http://127.0.0.1:9/mcp")).encode()
    config.write_bytes(original)
    assert wrap(tmp_path, str(config)).returncode == 0
    changed = config.read_text().replace('"mcpServers"', '"theme": "dark", "mcpServers"', 1)
    config.write_text(changed)
    _refused(wrap(tmp_path, "--undo", str(config)))
    assert config.read_text() == changed
    assert wrap(tmp_path, "--undo", "--force", str(config)).returncode == 0
    assert config.read_bytes() == original


def test_a_legacy_sse_server_is_left_as_it_is(tmp_path: Path) -> None:
    """Issue 23: a server the gateway cannot reach as configured (legacy SSE) is left alone; one with
    headers of its own is wrapped since issue 31 (tests/gateway/test_upstream_credentials.py)."""
    config = tmp_path / "mcp.json"
    entries = {"old": {"type": "sse", "url": "https://example.test/sse"}}
    config.write_text(json.dumps({"servers": entries}))
    result = wrap(tmp_path, str(config))
    assert result.returncode == 0, result.stderr
    assert json.loads(config.read_text()) == {"servers": entries}
    assert not config.with_name("mcp.json.bak").exists()
