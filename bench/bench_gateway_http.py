"""The gateway's HTTP front against `supergateway --stateful` (npm), same run, same upstream (issue 9).

The upstream is the conformance target (tests/upstreams/conformance_target.py, the `mcp` SDK over
STDIO) behind each: `mcp-server gateway --listen http://…`, `supergateway --stdio … --outputTransport
streamableHttp --stateful`, and the target over STDIO directly (NDJSON, the floor). A raw HTTP/1.1
client on keep-alive connections (one per worker) sends `tools/call test_simple_text`: sequential
round trips for p50/p99, then the same number with 16 in flight for calls/s. Prints medians of
repeats and the same-run ratios against the targets (p50 at most 0.5x supergateway's, calls/s at
concurrency 16 at least 2x supergateway's).
Usage: python bench/bench_gateway_http.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = [sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_target.py")]
FAST = [sys.executable, str(ROOT / "bench" / "fast_upstream.py")]  # answers at once: the fronts' own cost
UPSTREAMS = {"target": TARGET, "fast": FAST}
WARM_UP = 200
SUPERGATEWAY = ROOT / ".cache" / "node" / "supergateway-4.0.0" / "node_modules" / ".bin" / "supergateway"
VERSION = "2025-11-25"


TOOL_CALLS = {
    "target": {"name": "test_simple_text", "arguments": {}},
    "fast": {"name": "tool_1", "arguments": {"text": "hello"}},
}


def call(index: int, upstream: str) -> bytes:
    frame = {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": TOOL_CALLS[upstream]}
    return json.dumps(frame).encode()


def initialize() -> bytes:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode()


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class HttpConnection:
    """One keep-alive HTTP/1.1 connection: POST a frame, read the reply (JSON, or the SSE event
    carrying it; content-length or chunked)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str) -> None:
        self.reader, self.writer, self.host, self.path = reader, writer, host, path
        self.session_id: str | None = None
        self.authorization: str | None = None  # an Authorization header of its own (bench_auth.py)

    @classmethod
    async def open(cls, url: str) -> HttpConnection:
        address, _, path = url.removeprefix("http://").partition("/")
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer, address, "/" + path)

    async def post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
            f"MCP-Protocol-Version: {VERSION}\r\n"
        )
        if self.session_id is not None:
            head += f"Mcp-Session-Id: {self.session_id}\r\n"
        if self.authorization is not None:
            head += f"Authorization: {self.authorization}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            payload = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            parts = []
            while (size := int((await self.reader.readline()).split(b";")[0], 16)) > 0:
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            await self.reader.readline()
            payload = b"".join(parts)
        else:
            payload = b""
        if headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in payload.split(b"\n") if line.startswith(b"data:")]
            payload = [d for d in data if d][-1] if any(data) else b""
        return status, headers, payload

    def close(self) -> None:
        self.writer.close()


async def http_session(url: str) -> str:
    connection = await HttpConnection.open(url)
    status, headers, _ = await connection.post(initialize())
    assert status == 200, status
    connection.session_id = headers["mcp-session-id"]
    status, _, _ = await connection.post(INITIALIZED)
    assert status in (200, 202), status
    connection.close()
    return connection.session_id


async def http_run(url: str, n: int, depth: int, upstream: str) -> tuple[list[float], float]:
    """Sequential latencies for n calls (after a warm-up), then calls/s for n calls with ``depth`` in flight."""
    session_id = await http_session(url)
    connections = [await HttpConnection.open(url) for _ in range(depth)]
    for connection in connections:
        connection.session_id = session_id
    for index in range(WARM_UP):
        await connections[0].post(call(-index - 1, upstream))
    latencies = []
    for index in range(n):
        began = time.perf_counter()
        status, _, payload = await connections[0].post(call(index + 1, upstream))
        latencies.append(time.perf_counter() - began)
        assert status == 200 and b'"result"' in payload, payload[:200]
    counter = iter(range(n))

    async def worker(connection: HttpConnection) -> None:
        for index in counter:
            status, _, payload = await connection.post(call(n + index + 1, upstream))
            assert status == 200 and b'"result"' in payload, payload[:200]

    began = time.perf_counter()
    await asyncio.gather(*(worker(connection) for connection in connections))
    rate = n / (time.perf_counter() - began)
    for connection in connections:
        connection.close()
    return latencies, rate


async def stdio_run(n: int, depth: int, upstream: str) -> tuple[list[float], float]:
    process = await asyncio.create_subprocess_exec(
        *UPSTREAMS[upstream],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    async def round_trip(frame: bytes) -> bytes:
        stdin.write(frame + b"\n")
        return await stdout.readline()

    await round_trip(initialize())
    stdin.write(INITIALIZED + b"\n")
    for index in range(WARM_UP):
        await round_trip(call(-index - 1, upstream))
    latencies = []
    for index in range(n):
        began = time.perf_counter()
        await round_trip(call(index + 1, upstream))
        latencies.append(time.perf_counter() - began)
    window = asyncio.Semaphore(depth)

    async def writer() -> None:
        for index in range(n):
            await window.acquire()
            stdin.write(call(n + index + 1, upstream) + b"\n")

    began = time.perf_counter()
    writing = asyncio.ensure_future(writer())
    for _ in range(n):
        await stdout.readline()
        window.release()
    rate = n / (time.perf_counter() - began)
    await writing
    stdin.close()
    await process.wait()
    return latencies, rate


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(command: list[str], url: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    host, port = url.removeprefix("http://").split("/")[0].rsplit(":", 1)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{command[0]} did not start") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


def compare(upstream: str, n: int, repeats: int, depth: int, env: dict[str, str], node: str) -> None:
    command_of = UPSTREAMS[upstream]
    p50: dict[str, list[float]] = {"stdio": [], "gateway": [], "supergateway": []}
    p99: dict[str, list[float]] = {name: [] for name in p50}
    rate: dict[str, list[float]] = {name: [] for name in p50}

    def record(name: str, latencies: list[float], calls: float) -> None:
        ordered = sorted(latencies)
        p50[name].append(ordered[len(ordered) // 2])
        p99[name].append(ordered[int(len(ordered) * 0.99)])
        rate[name].append(calls)

    for _ in range(repeats):
        record("stdio", *asyncio.run(stdio_run(n, depth, upstream)))
        for name in ("gateway", "supergateway"):
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            if name == "gateway":
                command = [sys.executable, "-m", "mcp_server", "gateway", "--listen", url, "--", *command_of]
            else:
                command = [
                    node, str(SUPERGATEWAY), "--stdio", " ".join(command_of), "--outputTransport", "streamableHttp",
                    "--stateful", "--port", str(port), "--logLevel", "none",
                ]  # fmt: skip
            process = serve(command, url, env)
            try:
                record(name, *asyncio.run(http_run(url, n, depth, upstream)))
            finally:
                stop(process)
    med = {
        key: {name: statistics.median(values) for name, values in table.items()}
        for key, table in (("p50", p50), ("p99", p99), ("rate", rate))
    }
    tool = TOOL_CALLS[upstream]["name"]
    print(f"\nupstream {upstream}: tools/call {tool}, {n} calls, median of {repeats} runs")
    print(f"{'':14}{'p50 µs':>10}{'p99 µs':>10}{'calls/s @16':>14}")
    for name in ("stdio", "gateway", "supergateway"):
        print(f"{name:14}{med['p50'][name] * 1e6:10.0f}{med['p99'][name] * 1e6:10.0f}{med['rate'][name]:14.0f}")
    p50_ratio = med["p50"]["gateway"] / med["p50"]["supergateway"]
    rate_ratio = med["rate"]["gateway"] / med["rate"]["supergateway"]
    print(f"p50 through the gateway: {p50_ratio:.2f}x supergateway's (target ≤ 0.50)")
    print(f"calls/s at concurrency 16: {rate_ratio:.2f}x supergateway's (target ≥ 2.00)")
    print(f"gateway vs the upstream over STDIO directly: p50 {med['p50']['gateway'] / med['p50']['stdio']:.2f}x, "
          f"calls/s {med['rate']['gateway'] / med['rate']['stdio']:.2f}x")  # fmt: skip


def main() -> None:
    quick = "--quick" in sys.argv
    n, repeats, depth = (300, 1, 16) if quick else (2000, 3, 16)
    node = shutil.which("node")
    if not SUPERGATEWAY.exists() or node is None:
        raise SystemExit(
            "supergateway is not installed: npm install --prefix .cache/node/supergateway-4.0.0 supergateway@4.0.0"
        )
    runs = tempfile.mkdtemp(prefix="bench-gateway-http-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env.update(PYTHONPATH=str(ROOT), MCP_RUNS_DIR=runs, MCP_READY_FILE=str(Path(runs) / "ready"))
    for upstream in ("target", "fast"):
        compare(upstream, n, repeats, depth, env, node)


if __name__ == "__main__":
    main()
