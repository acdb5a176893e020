"""Failure isolation in the aggregate (issue 33): a server that fails to start, crashes or stops
answering loses only its own tools (removed with `list_changed`), is started again, and is back when
it answers; what it was answering gets the catalogued upstream error; the others never wait for it;
start-up waits for the slowest server no longer than its bound; a name two servers would share, or
one too long, is refused at start-up. Real processes, the official SDK client.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from ..conftest import cli
from .aggregate_servers import (
    FLEET,
    WAIT,
    descendants,
    http_gateway,
    memory,
    report_of,
    server,
    server_pid,
    stdio_gateway,
    write_config,
)


class Watched:
    """A client of the aggregate, and the list changes it is told of, in order."""

    def __init__(self, client: Client, changes: asyncio.Queue[str]) -> None:
        self.client, self.changes = client, changes

    async def tools(self) -> set[str]:
        return {tool.name for tool in (await self.client.list_tools(cache_mode="bypass")).tools}

    async def changed(self) -> None:
        """Until the next ``notifications/tools/list_changed``."""
        while await asyncio.wait_for(self.changes.get(), WAIT) != "notifications/tools/list_changed":
            pass

    async def until_listed(self, name: str, *, listed: bool = True) -> set[str]:
        """The tools once ``name`` is (or is not) among them, a list change at a time."""
        while (name in (found := await self.tools())) is not listed:
            await self.changed()
        return found


@asynccontextmanager
async def watched(target: StdioServerParameters | str) -> AsyncIterator[Watched]:
    changes: asyncio.Queue[str] = asyncio.Queue()

    async def note(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification | types.ProgressNotification):
            changes.put_nowait(message.method)

    async with Client(target, mode="legacy", read_timeout_seconds=WAIT, message_handler=note) as client:
        yield Watched(client, changes)


def unavailable(error: MCPError, server_name: str) -> bool:
    """An error in a server's place: the catalogue's upstream_unavailable, naming the server."""
    data = error.error.data if isinstance(error.error.data, dict) else {}
    member = CanonicalError.UPSTREAM_UNAVAILABLE
    return error.code == member.mcp_code and data.get("reason") == member.reason and data.get("server") == server_name


def gateway_pid(marker: str) -> int:
    """The gateway the SDK client started over STDIO (below this test's process)."""
    [found] = [
        pid
        for pid in descendants(os.getpid())
        if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    ]
    return found


async def kill_and_come_back(target: StdioServerParameters | str, pid_of_gateway: Any, hold: Path) -> list[Any]:
    """The FastMCP server killed mid-call and held from starting again: its call is answered with the
    upstream error, its tools leave the list, the other server answers meanwhile; released, it is back."""
    async with watched(target) as aggregate:
        assert {"fleet__add", "memory__read_graph"} <= await aggregate.tools()
        slow = asyncio.ensure_future(
            aggregate.client.call_tool("fleet__count_slowly", {"seconds": 60}, progress_callback=_ignore)
        )
        await asyncio.wait_for(aggregate.changes.get(), WAIT)  # its first progress: the call is under way
        hold.touch()
        os.kill(server_pid(pid_of_gateway(), "fleet_server.py"), signal.SIGKILL)
        with pytest.raises(MCPError) as pending:
            await slow
        gone = await aggregate.until_listed("fleet__add", listed=False)
        with pytest.raises(MCPError) as refused:
            await aggregate.client.call_tool("fleet__add", {"a": 1, "b": 2})
        other = await aggregate.client.call_tool("memory__read_graph", {})
        hold.unlink()
        back = await aggregate.until_listed("fleet__add")
        again = await aggregate.client.call_tool("fleet__add", {"a": 1, "b": 2})
        return [
            unavailable(pending.value, "fleet"),
            unavailable(refused.value, "fleet"),
            gone,
            other.is_error,
            back,
            again.structured_content,
        ]


async def _ignore(value: float, total: float | None, message: str | None) -> None:
    return None


@pytest.mark.parametrize("front", ["stdio", "http"])
def test_a_server_killed_loses_only_its_tools_and_is_back_when_it_answers(tmp_path: Path, front: str) -> None:
    """Issue 33, failure isolation: a crashed server's pending call gets upstream_unavailable (naming
    it), its tools are removed with list_changed, another server answers meanwhile; it is started again
    and its tools come back with list_changed."""
    hold = tmp_path / "hold"
    servers = {
        "fleet": server([*FLEET, "--hold", str(hold)]),
        "memory": server(memory(), env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}),
    }
    config = write_config(tmp_path, servers, restart_seconds=0.1, restart_max_seconds=0.5)
    if front == "stdio":
        found = asyncio.run(
            asyncio.wait_for(
                kill_and_come_back(
                    stdio_gateway(tmp_path, "--config", str(config)), lambda: gateway_pid(str(config)), hold
                ),
                4 * WAIT,
            )
        )
    else:
        with http_gateway(tmp_path, "--config", str(config)) as gateway:
            found = asyncio.run(
                asyncio.wait_for(kill_and_come_back(gateway.url, lambda: gateway.process.pid, hold), 4 * WAIT)
            )
    pending, refused, gone, other_failed, back, again = found
    assert pending and refused
    assert not any(name.startswith("fleet__") for name in gone) and "memory__read_graph" in gone
    assert other_failed is False
    assert "fleet__add" in back and again == {"total": 3}
    fleet = next(entry for entry in report_of(tmp_path)["servers"] if entry["name"] == "fleet")
    assert len(fleet["sessions"]) >= 2 and fleet["violations"].get("upstream_unavailable") == 1  # the call it left


async def stop_and_come_back(url: str, gateway: int) -> list[Any]:
    async with watched(url) as aggregate:
        slow = asyncio.ensure_future(
            aggregate.client.call_tool("fleet__count_slowly", {"seconds": 60}, progress_callback=_ignore)
        )
        await asyncio.wait_for(aggregate.changes.get(), WAIT)
        stopped = server_pid(gateway, "fleet_server.py")
        os.kill(stopped, signal.SIGSTOP)  # alive, but it answers nothing any more
        other = await aggregate.client.call_tool("memory__read_graph", {})
        with pytest.raises(MCPError) as pending:
            await slow
        await aggregate.until_listed("fleet__add")
        again = await aggregate.client.call_tool("fleet__add", {"a": 2, "b": 2})
        return [
            other.is_error,
            unavailable(pending.value, "fleet"),
            stopped != server_pid(gateway, "fleet_server.py"),
            again.structured_content,
        ]


def test_a_server_that_stops_answering_is_restarted_and_holds_up_no_other(tmp_path: Path) -> None:
    """Issue 33: a server that stops answering (SIGSTOP) is found out by a ping it leaves unanswered;
    its call gets upstream_unavailable, another server answers meanwhile, a new process takes its place."""
    servers = {"fleet": server(FLEET), "memory": server(memory(), env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")})}
    config = write_config(tmp_path, servers, health_seconds=0.5, restart_seconds=0.1)
    with http_gateway(tmp_path, "--config", str(config)) as gateway:
        other_failed, pending, replaced, again = asyncio.run(
            asyncio.wait_for(stop_and_come_back(gateway.url, gateway.process.pid), 4 * WAIT)
        )
    assert other_failed is False and pending and replaced and again == {"total": 4}


async def first_session(target: StdioServerParameters) -> list[Any]:
    """The first session: answered though a server never answers; the FastMCP server's tools are
    there, or come with a list change (on a busy machine it may be slower than the bound)."""
    async with watched(target) as aggregate:
        names = await aggregate.until_listed("fleet__add")
        with pytest.raises(MCPError) as unknown:
            await aggregate.client.call_tool("ghost__anything", {})
        added = await aggregate.client.call_tool("fleet__add", {"a": 1, "b": 1})
        return [names, unknown.value, added.structured_content]


def test_a_server_that_never_starts_or_never_answers_keeps_no_other_from_serving(tmp_path: Path) -> None:
    """Issue 33: start-up does not wait for the slowest server longer than its bound (a server that
    never answers, `start_seconds` 5, long enough for a server that does start on a loaded machine,
    the client's timeout 60: answered all the same); a server whose command does not exist loses only
    its own tools."""
    servers = {
        "ghost": {"command": str(tmp_path / "no-such-server")},
        "sloth": server([sys.executable, "-c", "import sys; sys.stdin.read()"]),
        "fleet": server(FLEET),
    }
    config = write_config(tmp_path, servers, start_seconds=5)
    names, unknown, added = asyncio.run(
        asyncio.wait_for(first_session(stdio_gateway(tmp_path, "--config", str(config))), 4 * WAIT)
    )
    assert names and all(name.startswith("fleet__") for name in names)
    # A tool of a server that never started was never listed: the gateway refuses it (ADR 26).
    assert unknown.code == CanonicalError.TOOL_NOT_FOUND.mcp_code
    assert added == {"total": 2}
    assert {entry["name"] for entry in report_of(tmp_path)["servers"]} >= {"ghost", "sloth", "fleet"}


@pytest.mark.parametrize(
    ("servers", "says"),
    [
        (
            {"a": server(FLEET, prefix=""), "b": server(FLEET, prefix="")},
            ["tool name 'add'", "server 'a'", "server 'b'"],
        ),
        ({"x" * 62: server(FLEET)}, ["characters (at most 64"]),
    ],
    ids=["collision", "too-long"],
)
@pytest.mark.parametrize("listen", ["stdio", "http://127.0.0.1:0/mcp"])
def test_a_name_taken_twice_or_too_long_is_refused_at_start_up_with_exit_2(
    tmp_path: Path, servers: dict[str, Any], says: list[str], listen: str
) -> None:
    """Issue 33: a name too long or colliding is refused at start-up with a clear message (exit 2),
    before either front serves anyone."""
    done = cli(tmp_path, "gateway", "--listen", listen, "--config", str(write_config(tmp_path, servers)))
    assert done.returncode == 2, done.stderr[-2000:]
    error = [line for line in done.stderr.splitlines() if line.startswith("mcp:error reason=setup_failed")]
    assert error and all(said in error[0] for said in says), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stdout == "" and "mcp:ready" not in done.stderr
