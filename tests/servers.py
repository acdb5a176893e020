"""`mcp-server serve` as a real process on each transport, for the tests that talk to it."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mcp_server.harness.golden import wait_ready
from mcp_server.harness.replay import Replayed, replay_ndjson

from .conftest import initialize_frame, server_command, server_env

WAIT = 20.0


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    ready_file: Path
    stderr_file: Path
    address: str  # the socket path or the URL

    def stderr(self) -> str:
        return self.stderr_file.read_text(errors="replace")

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(WAIT)


@contextmanager
def serving(tmp_path: Path, args: Sequence[str], **env: str) -> Iterator[Running]:
    """``mcp-server serve ARGS`` until the block ends (then SIGTERM; the exit status is the caller's)."""
    ready_file = tmp_path / f"ready-{len(list(tmp_path.iterdir()))}"
    stderr_file = ready_file.with_suffix(".stderr")
    with stderr_file.open("wb") as stderr:
        process = subprocess.Popen(
            [*server_command(), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=server_env(tmp_path, MCP_READY_FILE=str(ready_file), **env),
        )
    try:
        address = wait_ready(process, ready_file, stderr_file)
        if "--socket" in args:
            address = str(args[list(args).index("--socket") + 1])
        yield Running(process, ready_file, stderr_file, address)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(WAIT)


def replay_stdio(
    tmp_path: Path, frames: Sequence[bytes], *, stderr_path: Path | None = None, **env: str
) -> list[Replayed]:
    """The frames through a fresh ``mcp-server serve`` over STDIO (its stderr kept in ``stderr_path``)."""

    async def run() -> list[Replayed]:
        stderr = asyncio.subprocess.DEVNULL if stderr_path is None else stderr_path.open("wb")
        process = await asyncio.create_subprocess_exec(
            *server_command(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=server_env(tmp_path, **env),
            limit=1 << 24,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            return await replay_ndjson(frames, process.stdout, process.stdin)
        finally:
            process.stdin.close()
            await asyncio.wait_for(process.wait(), WAIT)
            if not isinstance(stderr, int):
                stderr.close()

    return asyncio.run(run())


TIMEOUT = 30.0
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, body: Any, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url, content=content, headers={**HEADERS, **headers}, timeout=TIMEOUT)


def open_session(url: str, version: str = "2025-11-25") -> str:
    response = post(url, initialize_frame(version))
    assert response.status_code == 200
    session_id = response.headers["mcp-session-id"]
    assert (
        post(
            url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **{"Mcp-Session-Id": session_id}
        ).status_code
        == 202
    )
    return session_id
