"""Golden logs: replay a script of raw frames against a real server (or gateway) process, and
record its event log as a golden file, or compare the events with one.

Deterministic goldens compare byte for byte; others semantically, without ``VOLATILE_FIELDS``.
Either way the front transport's name is not compared (the same script over STDIO, a Unix socket
and HTTP gives the same events), and over HTTP neither is ``session_id``: there every request
without ``Mcp-Session-Id`` is a session of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..chain.classify import is_request_id
from ..core import jsonio
from ..core.diff import diff_documents
from ..core.files import write_atomic
from ..observe.events import VOLATILE_FIELDS, read_events
from .replay import ReplayError, load_script, replay_http, script_args, script_upstream

__all__ = [
    "TRANSPORTS",
    "GoldenDifference",
    "check_events",
    "run_script",
    "run_script_file",
    "wait_ready",
]

TRANSPORTS = ("stdio", "socket", "http")
HTTP_ONLY_FIELDS = ("session_id",)
_FRONT = "<front>"
_WAIT = 60.0


@dataclass(frozen=True, slots=True)
class GoldenDifference:
    """One event that differs: its index, and the RFC 6902 patch from the golden to what ran."""

    index: int
    patch: list[dict[str, Any]]

    def line(self) -> str:
        return f"event {self.index}: {jsonio.dumps(self.patch).decode()}"


def _server_args(
    transport: str, workdir: Path, upstream: Sequence[str] | None, options: Sequence[str] = ()
) -> list[str]:
    """The command line of the process under test, on ``transport``."""
    base = [sys.executable, "-m", "mcp_server"]
    if upstream is None:
        front = {"stdio": [], "socket": ["--socket", str(workdir / "mcp.sock")], "http": ["--http", "127.0.0.1:0"]}
        return [*base, "serve", "--log-stream", "golden", *options, *front[transport]]
    listen = {"stdio": "stdio", "socket": f"unix:{workdir / 'mcp.sock'}", "http": "http://127.0.0.1:0/mcp"}
    return [*base, "gateway", "--log-stream", "golden", *options, "--listen", listen[transport], "--", *upstream]


def wait_ready(process: subprocess.Popen[bytes], ready: Path, stderr: Path) -> str:
    """The address in a server's ready file once it is complete; ``ReplayError`` when the server
    exits first (with the end of its ``stderr``) or is not ready in time (it is killed)."""
    deadline = time.monotonic() + _WAIT
    while not (ready.exists() and ready.read_text().endswith("\n")):
        if process.poll() is not None:
            raise ReplayError(f"the server exited with {process.returncode}: {stderr.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            process.kill()
            raise ReplayError("the server did not become ready")
        time.sleep(0.01)
    return ready.read_text().split()[-1]


def _awaited_id(frame: bytes) -> str | int | None:
    """The id of a request whose answer a client waits for before it sends anything else."""
    try:
        document = jsonio.loads(frame)
    except jsonio.JSONSyntaxError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("method"), str):
        return None
    request_id = document.get("id")
    return request_id if is_request_id(request_id) else None


async def _feed_ndjson(frames: Sequence[bytes], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send the frames as a client would (a request's answer before the next frame), then end of
    input, and read until the server closes: its events come in one order, whatever the timing."""
    for frame in frames:
        writer.write(frame + b"\n")
        await writer.drain()
        awaited = _awaited_id(frame)
        while awaited is not None:
            line = await asyncio.wait_for(reader.readline(), _WAIT)
            if not line:
                raise ReplayError("the server closed the stream before answering every request")
            with contextlib.suppress(jsonio.JSONSyntaxError):
                reply = jsonio.loads(line)
                if isinstance(reply, dict) and "method" not in reply and reply.get("id") == awaited:
                    awaited = None
    writer.write_eof()
    while await asyncio.wait_for(reader.read(1 << 16), _WAIT):
        pass
    writer.close()


async def _feed_socket(frames: Sequence[bytes], path: str) -> None:
    reader, writer = await asyncio.open_unix_connection(path, limit=1 << 24)
    await _feed_ndjson(frames, reader, writer)


async def _feed_stdio(frames: Sequence[bytes], command: Sequence[str], env: Mapping[str, str], stderr: Any) -> int:
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=dict(env),
        limit=1 << 24,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        await _feed_ndjson(frames, process.stdout, process.stdin)
        return await asyncio.wait_for(process.wait(), _WAIT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def run_script(
    frames: Sequence[bytes],
    *,
    transport: str = "stdio",
    upstream: Sequence[str] | None = None,
    options: Sequence[str] = (),
    deterministic: bool = True,
) -> list[dict[str, Any]]:
    """Replay ``frames`` against a fresh server (or a gateway before ``upstream``) started with
    ``options``; its events."""
    if transport not in TRANSPORTS:
        raise ReplayError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
    with tempfile.TemporaryDirectory(prefix="mcp-golden-") as temporary:
        workdir = Path(temporary)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
        env.update(
            MCP_RUNS_DIR=str(workdir / "runs"),
            MCP_READY_FILE=str(workdir / "ready"),
            MCP_DETERMINISTIC="1" if deterministic else "0",
        )
        command = _server_args(transport, workdir, upstream, options)
        stderr_path = workdir / "stderr"
        with stderr_path.open("wb") as stderr:
            if transport == "stdio":
                status = asyncio.run(_feed_stdio(frames, command, env, stderr))
            else:
                process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env
                )
                try:
                    address = wait_ready(process, workdir / "ready", stderr_path)
                    if transport == "socket":
                        asyncio.run(_feed_socket(frames, str(workdir / "mcp.sock")))
                    else:
                        asyncio.run(replay_http(frames, address))
                finally:
                    if process.poll() is None:
                        process.send_signal(signal.SIGTERM)
                    try:
                        status = process.wait(_WAIT)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        raise ReplayError("the server did not stop on SIGTERM") from None
        if status not in (0, 1):  # a gateway whose upstream died exits 1, and that is worth a golden
            raise ReplayError(f"the server exited with {status}: {stderr_path.read_text()[-2000:]}")
        latest = workdir / "runs" / "mcp_server" / "golden" / ".latest"
        if not latest.exists():
            raise ReplayError("the server wrote no event log")
        return list(read_events(latest))


def run_script_file(
    script: Path, *, transport: str = "stdio", upstream: Sequence[str] | None = None, deterministic: bool = True
) -> list[dict[str, Any]]:
    """``run_script`` of a script file: its frames, against the upstream and with the options its
    header names (``upstream`` given here wins)."""
    return run_script(
        load_script(script),
        transport=transport,
        upstream=upstream or script_upstream(script),
        options=script_args(script),
        deterministic=deterministic,
    )


def _front(events: Sequence[Mapping[str, Any]]) -> str | None:
    for event in events:
        if event.get("event") == "start":
            front = event.get("transport")
            return front if isinstance(front, str) else None
    return None


def _comparable(event: Mapping[str, Any], front: str | None, *, semantic: bool, http: bool) -> dict[str, Any]:
    shaped = dict(event)
    if front is not None and shaped.get("transport") == front:
        shaped["transport"] = _FRONT
    for name in (VOLATILE_FIELDS if semantic else ()) + (HTTP_ONLY_FIELDS if http else ()):
        shaped.pop(name, None)
    return shaped


def check_events(golden: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]]) -> list[GoldenDifference]:
    """Compare two runs' events (see the module docstring); one difference per event that differs."""
    deterministic = bool(golden) and all(e.get("metadata", {}).get("deterministic") for e in [*golden, *actual])
    golden_front, actual_front = _front(golden), _front(actual)
    http = "http" in (golden_front, actual_front)
    differences = []
    for index in range(max(len(golden), len(actual))):
        if index >= len(golden):
            differences.append(GoldenDifference(index, [{"op": "add", "path": "", "value": actual[index]}]))
            continue
        if index >= len(actual):
            differences.append(GoldenDifference(index, [{"op": "remove", "path": ""}]))
            continue
        expected = _comparable(golden[index], golden_front, semantic=not deterministic, http=http)
        seen = _comparable(actual[index], actual_front, semantic=not deterministic, http=http)
        # Deterministic: byte for byte, field order included.
        same = jsonio.dumps(expected) == jsonio.dumps(seen) if deterministic else expected == seen
        if not same:
            differences.append(GoldenDifference(index, diff_documents(expected, seen)))
    return differences


def write_golden(path: Path, events: Sequence[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, b"".join(jsonio.dumps_line(event) for event in events))
