"""`serve` over STDIO: its peak RSS after a session, against the floor of any Python server here.

The floor is a Python process that imports what every server of this design must (asyncio, orjson,
jsonschema-rs) and echoes lines on the event loop. `serve` runs a 2025-11-25 session (initialize,
tools/list, 200 tool calls and 200 pings, 16 in flight) with the event log on; its peak RSS (VmHWM) is read
before its input closes. Rounds take turns; medians and spread (min-max), the ratio per round.
Then where the memory goes, measured in one process step by step: the interpreter, asyncio, orjson
and jsonschema-rs, the package's imports for `serve`, the registry, and one version compiled.
Usage: python bench/bench_memory.py [--quick]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FLOOR = """
import asyncio, sys, orjson, jsonschema_rs
async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        sys.stdout.buffer.write(orjson.dumps(orjson.loads(line)) + b"\\n"); sys.stdout.flush()
asyncio.run(main())
"""

STEPS = """
import sys
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) / 1024
steps = [('interpreter', rss())]
import asyncio
steps.append(('asyncio', rss()))
import orjson, jsonschema_rs
steps.append(('orjson and jsonschema-rs', rss()))
import mcp_server.cli, mcp_server.serve.startup, mcp_server.transport.stdio, mcp_server.serve.app
steps.append(("the package's imports for serve", rss()))
from mcp_server.registry.schemas import SchemaRegistry
registry = SchemaRegistry()
steps.append(('the registry (nothing compiled)', rss()))
registry.protocol('2025-11-25').compile_all()
steps.append(('one version compiled (2025-11-25)', rss()))
for version in registry.versions:
    registry.protocol(version).compile_all()
steps.append(('every version compiled', rss()))
print(repr(steps))
"""


def session_frames(calls: int) -> bytes:
    version = "2025-11-25"
    frames: list[dict] = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
    ]
    asset = {"type": "text", "text": "x" * 200}
    for index in range(calls):
        arguments = {"asset": asset, "schema": "CallToolResult"} if index % 2 else {}
        name = "validate_asset" if index % 2 else "list_schemas"
        frames.append(
            {"jsonrpc": "2.0", "id": index + 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )
        frames.append({"jsonrpc": "2.0", "id": f"p{index}", "method": "ping"})
    return b"".join(json.dumps(frame).encode() + b"\n" for frame in frames)


def peak_rss(command: list[str], script: bytes, runs: str) -> float:
    """The process's peak RSS in MiB once it has answered every request of ``script``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MCP_RUNS_DIR=runs)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert process.stdin is not None and process.stdout is not None
    stdin = process.stdin
    lines = script.splitlines(keepends=True)
    window = threading.Semaphore(16)  # 16 requests in flight, as a busy client keeps: replies are read as they come

    def write() -> None:
        for line in lines:
            if b'"id"' in line:
                window.acquire()
            stdin.write(line)
            stdin.flush()

    writer = threading.Thread(target=write)
    writer.start()
    for _ in range(sum(1 for line in lines if b'"id"' in line)):
        assert process.stdout.readline(), "the server ended before answering"
        window.release()
    writer.join()
    status = Path(f"/proc/{process.pid}/status").read_text()
    peak = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1]) / 1024
    process.stdin.close()
    process.wait(30)
    return peak


def main() -> None:
    rounds = 3 if "--quick" in sys.argv else 7
    runs = tempfile.mkdtemp(prefix="bench-memory-")
    script = session_frames(200)
    floor_script = b"".join(line + b"\n" for line in script.splitlines() if b'"id"' in line)
    serve = [sys.executable, "-m", "mcp_server", "serve"]
    floor = [sys.executable, "-c", FLOOR]
    measured: dict[str, list[float]] = {"serve": [], "floor": []}
    for _ in range(rounds):
        measured["serve"].append(peak_rss(serve, script, runs))
        measured["floor"].append(peak_rss(floor, floor_script, runs))
    ratios = [a / b for a, b in zip(measured["serve"], measured["floor"], strict=True)]
    print(f"peak RSS over STDIO after a session, MiB, median (min-max) of {rounds}:")
    for name, values in measured.items():
        label = "mcp-server serve" if name == "serve" else "floor (asyncio + orjson + jsonschema-rs echo)"
        print(f"  {label:48} {statistics.median(values):6.1f} ({min(values):.1f}-{max(values):.1f})")
    print(f"  serve / floor: {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}); target serve ≤ 40 MiB")
    steps = eval(subprocess.run([sys.executable, "-c", STEPS], capture_output=True, check=True, cwd=ROOT).stdout)
    print("where it goes (RSS after each step, MiB, one process):")
    previous = 0.0
    for name, value in steps:
        print(f"  {name:40} {value:6.1f}  (+{value - previous:.1f})")
        previous = value


if __name__ == "__main__":
    main()
