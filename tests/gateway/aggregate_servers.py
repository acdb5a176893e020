"""The servers and gateways the aggregate's tests start (issue 33): `server-everything`,
`server-memory` (npm, pinned in `tests/node_tools.py`) and a FastMCP server of our own
(`tests/upstreams/fleet_server.py`), behind one `mcp-server gateway` on STDIO or HTTP. Holds no test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

from ..conftest import ROOT, server_env
from ..node_tools import SERVER_EVERYTHING, SERVER_MEMORY, node_command
from ..processes import children_of
from .gateways import started_gateway

WAIT = 60.0
FLEET = [sys.executable, str(ROOT / "tests" / "upstreams" / "fleet_server.py")]
BROKEN = [sys.executable, str(ROOT / "tests" / "upstreams" / "broken_server.py")]


def everything() -> list[str]:
    return [*node_command(SERVER_EVERYTHING, "mcp-server-everything"), "stdio"]


def memory() -> list[str]:
    return node_command(SERVER_MEMORY, "mcp-server-memory")


def server(command: list[str], **table: Any) -> dict[str, Any]:
    """A server's table of the gateway configuration."""
    return {"command": command[0], "args": command[1:], **table}


def three(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The three servers of the issue's "done when": FastMCP, server-memory, server-everything."""
    memory_file = {"MEMORY_FILE_PATH": str(tmp_path / f"memory-{time.monotonic_ns()}.jsonl")}
    return {"fleet": server(FLEET), "memory": server(memory(), env=memory_file), "everything": server(everything())}


def write_config(tmp_path: Path, servers: Mapping[str, Any], **aggregate: Any) -> Path:
    """A gateway configuration (JSON) with ``servers`` and the ``aggregate`` settings; its path."""
    path = tmp_path / f"gateway-{time.monotonic_ns()}.json"
    document: dict[str, Any] = {"servers": dict(servers)}
    if aggregate:
        document["aggregate"] = aggregate
    path.write_text(json.dumps(document))
    return path


def gateway_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server", "gateway", *options]


def stdio_gateway(tmp_path: Path, *options: str) -> StdioServerParameters:
    """The gateway on STDIO (``options``: ``--config FILE``, …), for the SDK client to start."""
    command = gateway_command(*options)
    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    return StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(tmp_path))


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    url: str

    def children(self) -> list[int]:
        """The servers the gateway runs now (its live child processes, but the log's writer)."""

        return [int(pid) for pid in children_of(self.process.pid, upstreams_only=True)]


@contextmanager
def http_gateway(tmp_path: Path, *options: str, env: Mapping[str, str] | None = None) -> Iterator[Running]:
    """The gateway on its HTTP front, once ready (``env``: variables of its own); stopped (SIGTERM)
    at the end, its stderr kept in ``tmp_path/gateway.err``."""
    arguments = ["--listen", "http://127.0.0.1:0/mcp", *options]
    errors = tmp_path / "gateway.err"
    with started_gateway(tmp_path, *arguments, env=dict(env or {}), stderr=errors, cwd=tmp_path) as (process, url):
        yield Running(process, url)


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (a server started by node runs under it)."""

    found: list[int] = []
    for child in children_of(pid):
        found += [int(child), *descendants(int(child))]
    return found


def server_pid(gateway_pid: int, marker: str) -> int:
    """The process of the server whose command line holds ``marker``, below the gateway."""
    deadline = time.monotonic() + WAIT
    while True:
        found = [pid for pid in descendants(gateway_pid) if marker in command_line(pid)]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no server process with {marker!r}"
        time.sleep(0.02)


def report_of(tmp_path: Path) -> dict[str, Any]:
    """The run's report (the last one written under ``tmp_path/runs``)."""
    paths = sorted(
        (tmp_path / "runs" / "mcp_server" / "gateway").glob("*-report.json"), key=lambda p: p.stat().st_mtime
    )
    return json.loads(paths[-1].read_text())


class Raw:
    """A raw NDJSON client of the gateway on STDIO: a request's reply, and what came meanwhile."""

    def __init__(self, tmp_path: Path, *options: str) -> None:
        self.process = subprocess.Popen(
            gateway_command(*options),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
            cwd=tmp_path,
        )
        self.heard: list[dict[str, Any]] = []  # notifications and requests, in order
        self.ids = iter(range(1, 1_000_000))

    def send(self, frame: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        self.process.stdin.flush()

    def next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the gateway closed stdout"
        return dict(json.loads(line))

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The reply to a request (what else comes first is kept in ``heard``)."""
        request_id = next(self.ids)
        self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": method, **({} if params is None else {"params": params})}
        )
        while (frame := self.next()).get("id") != request_id or "method" in frame:
            self.heard.append(frame)
        return frame

    def until(self, method: str) -> dict[str, Any]:
        """The next notification or request of ``method`` (the ones heard already first)."""
        for index, frame in enumerate(self.heard):
            if frame.get("method") == method:
                return self.heard.pop(index)
        while (frame := self.next()).get("method") != method:
            self.heard.append(frame)
        return frame

    def open(self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        reply = self.request("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.stdout.read()  # what it still says, to its end
        self.process.stdout.close()
        return self.process.wait(WAIT)


def every_page(peer: Raw, method: str, key: str) -> list[dict[str, Any]]:
    found, params = [], {}
    while True:
        result = peer.request(method, params)["result"]
        found += result[key]
        if "nextCursor" not in result:
            return found
        params = {"cursor": result["nextCursor"]}
