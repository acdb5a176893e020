"""The gateway on uvloop (issue 34): where the ``uvloop`` extra is installed the gateway runs on it,
and an official client's session through it is the session direct; ``MCP_EVENT_LOOP=asyncio`` keeps
asyncio's own loop.

Real processes: the gateway, a real upstream written with the official `mcp` SDK, and the official
SDK client in front (its STDIO transport, the gateway's stderr kept in a file).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from ..conftest import server_env
from .gateways import SDK_UPSTREAM, WAIT, gateway_command

pytest.importorskip("uvloop", reason="the uvloop extra is not installed")


async def _session(parameters: StdioServerParameters, errlog: Any) -> list[Any]:
    """What the official client sees of a session: the tools, a structured call, a text call, a
    tool's own error."""
    async with Client(stdio_client(parameters, errlog=errlog), mode="legacy", read_timeout_seconds=WAIT) as client:
        tools = await client.list_tools()
        added = await client.call_tool("add", {"a": 2, "b": 3})
        echoed = await client.call_tool("echo", {"text": "on the loop"})
        failed = await client.call_tool("fail", {"reason": "no"})
        return [
            sorted(tool.name for tool in tools.tools),
            (added.is_error, added.structured_content),
            (echoed.is_error, [block.model_dump() for block in echoed.content]),
            failed.is_error,
        ]


def _run(tmp_path: Path, command: list[str], **env: str) -> tuple[list[Any], str]:
    errors = tmp_path / f"stderr-{len(list(tmp_path.glob('stderr-*')))}.txt"
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), **env)
    )
    with errors.open("w") as errlog:
        seen = asyncio.run(asyncio.wait_for(_session(parameters, errlog), WAIT))
    return seen, errors.read_text()


@pytest.mark.parametrize("loop", ["auto", "asyncio"])
def test_an_official_client_session_through_the_gateway_on_each_loop_is_the_session_direct(
    tmp_path: Path, loop: str
) -> None:
    """Issue 34: uvloop where installed (``auto``), asyncio's loop when asked; the transports work on
    both, and the client sees what it sees direct."""
    direct, _ = _run(tmp_path, SDK_UPSTREAM)
    gated, stderr = _run(tmp_path, gateway_command(), MCP_EVENT_LOOP=loop)
    assert gated == direct
    assert direct[1] == (False, {"total": 5})
    expected = "uvloop" if loop == "auto" else "asyncio"
    ready = [line for line in stderr.splitlines() if line.startswith("mcp:ready mode=gateway")]
    assert len(ready) == 1 and ready[0].endswith(f" loop={expected}"), stderr


def test_an_unknown_event_loop_setting_stops_the_gateway_before_it_starts(tmp_path: Path) -> None:
    """Issue 34 (bad input gets a clear error): ``MCP_EVENT_LOOP`` other than auto or asyncio."""
    import subprocess

    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), MCP_EVENT_LOOP="trio")
    done = subprocess.run(gateway_command(), input=b"", capture_output=True, env=env, timeout=WAIT)
    assert done.returncode == 2
    assert "reason=setup_failed" in done.stderr.decode() and "MCP_EVENT_LOOP" in done.stderr.decode()
    assert done.stdout == b""


@pytest.mark.parametrize("loop", ["auto", "asyncio"])
@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_a_stdin_and_stdout_on_dev_null_end_the_session_cleanly_on_each_loop(
    tmp_path: Path, loop: str, command: str
) -> None:
    """Issue 34: ``/dev/null`` is a character device no poller takes (uvloop's loop refuses it, and
    asyncio's refused it as stdin): it is read and written directly, the run ends at its end with 0."""
    import subprocess

    argv = gateway_command() if command == "gateway" else [*gateway_command()[:3], "serve"]
    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), MCP_EVENT_LOOP=loop)
    with open(os.devnull, "rb") as nothing_in, open(os.devnull, "wb") as nothing_out:
        done = subprocess.run(argv, stdin=nothing_in, stdout=nothing_out, stderr=subprocess.PIPE, env=env, timeout=WAIT)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr and f"mcp:shutdown mode={'gateway' if command == 'gateway' else 'stdio'}" in stderr
