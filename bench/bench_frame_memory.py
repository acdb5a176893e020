"""The gateway's memory at the server side's frame limit (issue 29): its peak RSS (VmHWM) relaying
one result just under 16 MiB, against the same session's peak with small results only.

`mcp-server gateway` over STDIO before our FastMCP server (`tests/upstreams/matrix_server.py`,
`blob`: its text comes back twice, as content and as structured content). A raw client writes the
requests and reads the replies; the gateway's /proc/PID/status is read after each.
Usage: python bench/bench_frame_memory.py [--megabytes N ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OWN = [sys.executable, str(ROOT / "tests" / "upstreams" / "matrix_server.py")]


def status(pid: int, field: str) -> int:
    """A /proc/PID/status field in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class Session:
    def __init__(self, runs: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MCP_RUNS_DIR": runs, "MCP_READY_FILE": f"{runs}/ready"}
        command = [sys.executable, "-m", "mcp_server", "gateway", "--", *OWN]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
        """The reply and its size in bytes."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})}
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                return reply, len(line)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, nargs="*", default=[1.0, 7.9])
    args = parser.parse_args()
    session = Session(tempfile.mkdtemp(prefix="bench-memory-"))
    pid = session.process.pid
    try:
        info = {"name": "bench", "version": "1"}
        session.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})
        assert session.process.stdin is not None
        session.process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        session.call("tools/list")
        for _ in range(20):
            session.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        rss, peak = status(pid, "VmRSS") / 1024, status(pid, "VmHWM") / 1024
        print(f"idle session, small results: VmRSS {rss:.1f} MiB, VmHWM {peak:.1f} MiB")
        for megabytes in args.megabytes:
            reply, size = session.call(
                "tools/call", {"name": "blob", "arguments": {"kilobytes": int(megabytes * 1024)}}
            )
            assert "result" in reply, reply.get("error")
            print(
                f"a result of {size / 1048576:.1f} MiB relayed: VmHWM {status(pid, 'VmHWM') / 1024:.1f} MiB"
                f" (VmRSS after {status(pid, 'VmRSS') / 1024:.1f} MiB)"
            )
    finally:
        session.close()


if __name__ == "__main__":
    main()
