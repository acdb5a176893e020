"""The gateway as the tests run it: a raw NDJSON peer on its STDIO, its Streamable HTTP front until it
is ready, the frames and headers the tests send, its report, and the upstreams the tests put behind
it. One way of each, for every test of the gateway (holds no test)."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, cli, initialize_frame, server_env
from ..processes import children_of, stop

WAIT = 30.0


TARGET = (sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_target.py"))
SDK_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "sdk_server.py")]


BROKEN_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "broken_server.py")]


def gateway_command(*options: str, upstream: list[str] = SDK_UPSTREAM) -> list[str]:
    return [sys.executable, "-m", "mcp_server", "gateway", *options, "--", *upstream]


class Peer:
    """A raw NDJSON client on the gateway's STDIO, one request at a time."""

    def __init__(
        self,
        tmp_path: Path,
        *options: str,
        upstream: list[str] = SDK_UPSTREAM,
        env_extra: dict[str, str] | None = None,
    ) -> None:
        self.process = subprocess.Popen(
            gateway_command(*options, upstream=upstream),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), **(env_extra or {})),
        )

    def send(self, frame: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((frame if isinstance(frame, bytes) else json.dumps(frame).encode()) + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the gateway closed stdout"
        return json.loads(line)

    def call(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.send(frame)
        return self.receive()

    def finish(self) -> tuple[int, str]:
        _, stderr = self.process.communicate(b"", timeout=WAIT)
        return self.process.returncode, stderr.decode()


class Lines:
    """A gateway over STDIO driven by raw lines, several requests in flight at once: what it writes is
    read as it comes (a thread), each frame awaited within ``WAIT``."""

    def __init__(self, tmp_path: Path, *arguments: str) -> None:
        command = [sys.executable, "-m", "mcp_server", "gateway", *arguments]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
        )
        self._frames: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._frames.put(json.loads(line))
        self._frames.put(None)  # the end of its output

    def send(self, *frames: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        """The next frame the gateway writes; the test fails when none comes within ``WAIT``."""
        try:
            frame = self._frames.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError("the gateway answered nothing in time") from None
        assert frame is not None, "the gateway closed its output"
        return frame

    def reply_to(self, *ids: int | str) -> dict[str, Any]:
        """The first reply to one of ``ids`` (what comes meanwhile, notifications, is skipped)."""
        while True:
            frame = self.read()
            if "method" not in frame and frame.get("id") in ids:
                return frame

    def close(self) -> list[dict[str, Any]]:
        """End its input; every frame it still writes before it exits (within ``WAIT``)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        rest = []
        while (frame := self._frames.get(timeout=WAIT)) is not None:
            rest.append(frame)
        self.process.wait(WAIT)
        self.process.stdout.close()
        return rest


def report_of(tmp_path: Path) -> dict[str, Any]:
    [path] = sorted((tmp_path / "runs" / "mcp_server" / "gateway").glob("*-report.json"))
    return json.loads(path.read_text())


def handshake(peer: Peer, version: str) -> dict[str, Any]:
    reply = peer.call(initialize_frame(version, 1))
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return reply


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


VERSION = "2025-11-25"


@dataclass
class Gateway:
    process: subprocess.Popen[bytes]
    url: str

    def children(self) -> list[str]:
        return children_of(self.process.pid, upstreams_only=True)


@contextmanager
def started_gateway(
    tmp_path: Path,
    *arguments: str,
    env: dict[str, str] | None = None,
    stdin: int = subprocess.DEVNULL,
    stdout: int = subprocess.DEVNULL,
    stderr: int | Path = subprocess.PIPE,
    cwd: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``mcp-server gateway ARGUMENTS`` (``env``: variables of its own; its runs under ``tmp_path/runs``;
    run in ``cwd``) once it is ready: the process and the address its ready file names. ``stderr`` a
    pipe or a file (appended to). On the way out it is stopped (SIGTERM, SIGKILL after a while) and its
    pipes closed. The one way the tests start a gateway that listens."""
    ready = tmp_path / f"gateway-{time.monotonic_ns()}.ready"
    variables = {"MCP_READY_FILE": str(ready), "MCP_RUNS_DIR": str(tmp_path / "runs"), **(env or {})}
    with contextlib.ExitStack() as files:
        errors = stderr if isinstance(stderr, int) else files.enter_context(stderr.open("ab"))
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_server", "gateway", *arguments],
            stdin=stdin,
            stdout=stdout,
            stderr=errors,
            env=server_env(tmp_path, **variables),
            cwd=cwd,
        )
    try:
        deadline = time.monotonic() + WAIT
        while not (ready.exists() and ready.read_text().endswith("\n")):
            assert process.poll() is None, f"the gateway exited {process.returncode}: {_tail(stderr)}"
            assert time.monotonic() < deadline, "the gateway never became ready"
            time.sleep(0.02)
        yield process, ready.read_text().split()[-1]
    finally:
        stop(process)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _tail(stderr: int | Path) -> str:
    return stderr.read_text(errors="replace")[-2000:] if isinstance(stderr, Path) else "(its stderr is a pipe)"


@contextmanager
def http_gateway(
    tmp_path: Path, *options: str, upstream: list[str] = TARGET, env: dict[str, str] | None = None
) -> Iterator[Gateway]:
    """``mcp-server gateway --listen http://127.0.0.1:0/mcp OPTIONS -- UPSTREAM`` (``env``: variables
    of its own); its URL from the ready file; its stderr a pipe the test may read."""
    arguments = ["--listen", "http://127.0.0.1:0/mcp", *options]
    if "--upstream" not in options:
        arguments += ["--", *upstream]
    with started_gateway(tmp_path, *arguments, env=env) as (process, url):
        yield Gateway(process, url)


def rpc(request_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def initialize(client: httpx.Client, url: str) -> str:
    """A raw handshake; the session id the gateway issued."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    response = client.post(url, json=rpc(0, "initialize", params), headers=HEADERS)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    accepted = client.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**HEADERS, "Mcp-Session-Id": session_id},
    )
    assert accepted.status_code == 202
    return session_id


def body_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC reply in a JSON or single-event SSE response."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


def assert_refused(response: httpx.Response, member: CanonicalError) -> None:
    assert response.status_code == member.http_status, response.text
    assert response.json()["error"]["code"] == member.mcp_code
    assert response.json()["error"]["data"]["reason"] == member.reason


DRIFTING = [sys.executable, str(ROOT / "tests" / "upstreams" / "drifting_server.py")]


def lock(tmp_path: Path, *args: str, upstream: list[str] = DRIFTING, output: str = "mcp.lock.json") -> Path:
    """``mcp-server lock --output FILE ARGS -- UPSTREAM``; the lockfile written."""
    result = cli(tmp_path, "lock", "--output", output, *args, "--", *upstream, wait=WAIT)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return tmp_path / output


def stateless_call(arguments: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    return rpc(1, "tools/call", {"name": "echo", "arguments": arguments, "_meta": meta, **(extra or {})})


STATELESS_HEADERS = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


APPROVAL_POLICY = '[[tool]]\nmatch = "echo"\napproval = true\n'
