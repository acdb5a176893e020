"""Recorded sessions for `mcp-server check`: a raw NDJSON client of a real MCP server process that
records every frame with its direction, the capture files written from its records, and the `check`
command run on them. Shared by the tests of `check` (holds no test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..conftest import ROOT, initialize_frame, server_env

WAIT = 30.0
SDK_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "sdk_server.py")]
C2S, S2C = "client_to_server", "server_to_client"

Record = tuple[str, dict[str, Any]]


class Recorder:
    """A raw NDJSON client of a real MCP server process, recording every frame with its direction."""

    def __init__(self, tmp_path: Path, command: list[str] = SDK_SERVER, **env: str) -> None:
        """``env``: variables of the process's own (a gateway's ``MCP_RUNS_DIR``)."""
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(tmp_path, **env),
        )
        self.records: list[Record] = []

    def send(self, frame: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.records.append((C2S, frame))
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        self.process.stdin.flush()

    def pipeline(self, *frames: dict[str, Any]) -> None:
        """Frames written at once, before any reply is read, as a client that pipelines writes them."""
        assert self.process.stdin is not None
        self.records += [(C2S, frame) for frame in frames]
        self.process.stdin.write(b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))
        self.process.stdin.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        """Read (and record) server frames until the response to ``request_id``."""
        return self.answers(request_id)[request_id]

    def answers(self, *request_ids: int) -> dict[int, dict[str, Any]]:
        """Read (and record) server frames until the response to each of ``request_ids``, in
        whatever order they come."""
        assert self.process.stdout is not None
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < len(request_ids):
            line = self.process.stdout.readline()
            assert line, "the server closed stdout"
            frame = json.loads(line)
            self.records.append((S2C, frame))
            if frame.get("id") in request_ids and "method" not in frame:
                replies[frame["id"]] = frame
        return replies

    def call(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.send(frame)
        return self.answer(frame["id"])

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=WAIT)
        finally:
            self.process.stdout.close()


def write_wrapped(path: Path, records: list[Record]) -> Path:
    path.write_text("".join(json.dumps({"direction": d, "frame": f}) + "\n" for d, f in records))
    return path


def write_raw(path: Path, records: list[Record]) -> Path:
    path.write_text("".join(json.dumps(f) + "\n" for _, f in records))
    return path


def run_check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", "check", *args],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )


def handshake(version: str = "2025-11-25") -> list[dict[str, Any]]:
    return [
        initialize_frame(version, 1),
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
