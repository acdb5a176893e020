"""Round trips over each transport, beside the official SDK's Streamable HTTP server (issue 4).

Sequential `ping` and `tools/call validate_asset` round trips from one client: `mcp-server serve`
over STDIO, a Unix socket and HTTP (raw httpx with keep-alive), and the SDK's own server
(bench/sdk_http_peer.py, JSON responses, an equivalent tool) over HTTP. Same run, same machine.
Prints p50/p99 and calls/s per transport and method, and the ratios against the targets.
Usage: python bench/bench_transports.py [--quick]
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
VERSION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def initialize(request_id: int | str = 0) -> bytes:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}).encode()


def ping(i: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i


def call(i: int) -> bytes:
    arguments = {"asset": {"type": "text", "text": "hello " * 20}, "schema": "TextContent"}
    frame = {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "validate_asset", "arguments": arguments},
    }
    return json.dumps(frame).encode()


def env(tmp: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "SYN_"))}
    base["PYTHONPATH"] = str(ROOT)
    base["MCP_READY_FILE"] = str(tmp / f"ready-{time.monotonic_ns()}")
    base.update(extra)
    return base


def wait_ready(path: str) -> str:
    deadline = time.monotonic() + 30
    while not (os.path.exists(path) and Path(path).read_text().endswith("\n")):
        if time.monotonic() > deadline:
            raise SystemExit("server not ready")
        time.sleep(0.02)
    return Path(path).read_text().split()[-1]


def measure(round_trip: Callable[[bytes], object], frames: list[bytes]) -> list[float]:
    samples = []
    for frame in frames:
        start = time.perf_counter()
        round_trip(frame)
        samples.append(time.perf_counter() - start)
    return samples


def line_session(write: Callable[[bytes], object], readline: Callable[[], bytes], n: int) -> dict[str, list[float]]:
    """Handshake, then n sequential pings and n tools/calls over an NDJSON stream."""

    def round_trip(frame: bytes) -> bytes:
        write(frame + b"\n")
        return readline()

    round_trip(initialize())
    write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    return {
        "ping": measure(round_trip, [ping(i) for i in range(n)]),
        "call": measure(round_trip, [call(i) for i in range(n)]),
    }


def stdio_round_trips(tmp: Path, n: int) -> dict[str, list[float]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env(tmp),
        bufsize=0,
    )
    assert process.stdin is not None and process.stdout is not None
    result = line_session(process.stdin.write, process.stdout.readline, n)
    process.communicate(b"", timeout=30)
    return result


ECHO = """
import asyncio, sys
async def connection(reader, writer):
    while line := await reader.readline():
        if b'"id"' not in line:
            continue  # a notification: no reply
        writer.write(b'{"jsonrpc":"2.0","id":1,"result":{}}\\n')
        await writer.drain()
async def main():
    server = await asyncio.start_unix_server(connection, sys.argv[1])
    open(sys.argv[2], "w").write("ready\\n")
    await server.serve_forever()
asyncio.run(main())
"""


def echo_round_trips(tmp: Path, n: int) -> dict[str, list[float]]:
    """The machine's floor: a bare asyncio server answering every line at once, same socket, same client."""
    path, ready = str(tmp / "echo.sock"), str(tmp / f"echo-{time.monotonic_ns()}")
    process = subprocess.Popen([sys.executable, "-c", ECHO, path, ready])
    wait_ready(ready)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    result = line_session(client.sendall, client.makefile("rb").readline, n)
    client.close()
    process.kill()
    process.wait(30)
    os.unlink(path)
    return result


def socket_round_trips(tmp: Path, n: int) -> dict[str, list[float]]:
    path = str(tmp / "bench.sock")
    environment = env(tmp)
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "serve", "--socket", path], stderr=subprocess.DEVNULL, env=environment
    )
    wait_ready(environment["MCP_READY_FILE"])
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    result = line_session(client.sendall, client.makefile("rb").readline, n)
    client.close()
    process.send_signal(signal.SIGTERM)
    process.wait(30)
    return result


class RawHttp:
    """A minimal HTTP/1.1 keep-alive client on a raw socket: the same few µs for every server
    measured, so the figures are the servers' (a full client library adds ~0.5 ms per request)."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split("/", 1)[0].split(":")
        self.path = "/" + url.removeprefix("http://").split("/", 1)[1]
        self.host = f"{host}:{port}"
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        head = f"POST {self.path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.sock.sendall(head.encode() + b"\r\n" + body)
        status = int(self.reader.readline().split()[1])
        received: dict[str, str] = {}
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            received[name.strip().lower()] = value.strip()
        return status, received, self.reader.read(int(received.get("content-length", "0")))

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def http_round_trips(url: str, n: int) -> dict[str, list[float]]:
    client = RawHttp(url)
    status, received, body = client.post(initialize(), HEADERS)
    assert status == 200, body
    headers = dict(HEADERS)
    if "mcp-session-id" in received:
        headers["Mcp-Session-Id"] = received["mcp-session-id"]
    headers["MCP-Protocol-Version"] = VERSION
    client.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers)

    def round_trip(frame: bytes) -> bytes:
        status, _, body = client.post(frame, headers)
        assert status == 200, body
        return body

    try:
        return {
            "ping": measure(round_trip, [ping(i) for i in range(n)]),
            "call": measure(round_trip, [call(i) for i in range(n)]),
        }
    finally:
        client.close()


def ours_http(tmp: Path, n: int) -> dict[str, list[float]]:
    environment = env(tmp)
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "serve", "--http", "127.0.0.1:0"],
        stderr=subprocess.DEVNULL,
        env=environment,
    )
    url = wait_ready(environment["MCP_READY_FILE"])
    try:
        return http_round_trips(url, n)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def sdk_http(n: int) -> dict[str, list[float]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "sdk_http_peer.py"), str(port)], stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url.replace("/mcp", "/"), timeout=1)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise SystemExit("SDK peer not ready") from None
            time.sleep(0.05)
    try:
        return http_round_trips(url, n)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1e6


def main() -> None:
    quick = "--quick" in sys.argv
    n = 500 if quick else 3000
    repeats = 1 if quick else 3
    runs: dict[str, list[dict[str, list[float]]]] = {"stdio": [], "socket": [], "echo": [], "http": [], "sdk-http": []}
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        for _ in range(repeats):
            runs["stdio"].append(stdio_round_trips(tmp, n))
            runs["socket"].append(socket_round_trips(tmp, n))
            runs["echo"].append(echo_round_trips(tmp, n))
            runs["http"].append(ours_http(tmp, n))
            runs["sdk-http"].append(sdk_http(n))
    print(f"sequential round trips, one client, {n} per method, medians of {repeats} runs")
    print(f"{'':28}{'p50 µs':>10}{'p99 µs':>10}{'calls/s':>10}")
    p50: dict[tuple[str, str], float] = {}
    rate: dict[tuple[str, str], float] = {}
    for name, label in (
        ("stdio", "mcp-server STDIO"),
        ("socket", "mcp-server Unix socket"),
        ("echo", "bare asyncio echo (floor)"),
        ("http", "mcp-server HTTP"),
        ("sdk-http", "official SDK HTTP (peer)"),
    ):
        for method in ("ping", "call"):
            p50[name, method] = statistics.median(pct(run[method], 0.5) for run in runs[name])
            p99 = statistics.median(pct(run[method], 0.99) for run in runs[name])
            rate[name, method] = statistics.median(len(run[method]) / sum(run[method]) for run in runs[name])
            print(f"{label + ' ' + method:28}{p50[name, method]:10.0f}{p99:10.0f}{rate[name, method]:10.0f}")
    for method in ("ping", "call"):
        ratio = p50["http", method] / p50["sdk-http", method]
        print(f"HTTP p50 {method} / SDK server's: {ratio:.2f} (target <= 0.5)")
    socket_rates = f"{rate['socket', 'ping']:.0f} ping and {rate['socket', 'call']:.0f} tools/call"
    print(f"Unix socket, one client: {socket_rates} round trips/s (target >= 15,000)")
    print(f"Unix socket ping rate / bare asyncio echo floor: {rate['socket', 'ping'] / rate['echo', 'ping']:.2f}")


if __name__ == "__main__":
    main()
