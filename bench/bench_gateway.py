"""Gateway overhead: tools/call round trips direct over STDIO vs through `mcp-server gateway`.

Same run, same upstream, each of two: the conformance target (tests/upstreams/conformance_target.py,
an MCP server written with the official `mcp` SDK, as users run them) and bench/fast_upstream.py,
which answers at once (raw NDJSON, 20 tools with distinct schemas): there the gateway's own cost is
all that separates the two paths. Prints medians of repeats and same-run ratios: added p50 at
concurrency 1 (target ≤ 100 µs), throughput at concurrency 16 (target ≥ 70 % of direct), and the
gateway's RSS with 500 distinct tool schemas compiled (target ≤ 60 MiB).

Two floors, same run, say what the machine allows: bench/bare_relay.py in the instant upstream's
path (a process that moves lines and checks nothing, on threads and on the asyncio loop), and the
gateway's own chain measured in this process per frame, back to back and after the pause a frame
waits in a real round trip (the gateway's core idles while the client and the upstream work).
Usage: python bench/bench_gateway.py [--quick] [--instant]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fast_upstream import result_of, tool  # noqa: E402

from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES  # noqa: E402
from mcp_server.core.types import Frame, Message, Reply  # noqa: E402
from mcp_server.gateway.config import GatewayConfig  # noqa: E402
from mcp_server.gateway.reports import new_report  # noqa: E402
from mcp_server.gateway.session import GatewayRun, GatewaySession  # noqa: E402
from mcp_server.observe.events import EventLog, EventLogSettings  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402

UPSTREAM = [sys.executable, str(ROOT / "bench" / "fast_upstream.py")]
BARE_RELAY = [sys.executable, str(ROOT / "bench" / "bare_relay.py")]
TARGET = [sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_target.py")]


def spawn(command: list[str], runs: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MCP_RUNS_DIR=runs)
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


def send(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.flush()


def rpc(process: subprocess.Popen[bytes], frame: dict) -> dict:
    assert process.stdin is not None and process.stdout is not None
    send(process, json.dumps(frame).encode() + b"\n")
    return json.loads(process.stdout.readline())


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def initialize(process: subprocess.Popen[bytes]) -> None:
    rpc(process, INITIALIZE)


def start(command: list[str], runs: str) -> subprocess.Popen[bytes]:
    process = spawn(command, runs)
    initialize(process)
    assert process.stdin is not None
    send(process, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    rpc(process, {"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    return process


def call(index: int, size: int | None) -> bytes:
    """A call of one of the fast upstream's tools with ``size`` bytes of text, or (``None``) of the
    conformance target's ``test_simple_text``."""
    if size is None:
        params: dict = {"name": "test_simple_text", "arguments": {}}
    else:
        params = {"name": f"tool_{index % 20}", "arguments": {"text": "x" * size, "count": index, "tags": ["a", "b"]}}
    return json.dumps({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}).encode()


def sequential(process: subprocess.Popen[bytes], n: int, size: int | None) -> list[float]:
    assert process.stdin is not None and process.stdout is not None
    latencies = []
    for index in range(n):
        frame = call(index, size) + b"\n"
        began = time.perf_counter()
        send(process, frame)
        process.stdout.readline()
        latencies.append(time.perf_counter() - began)
    return latencies


def concurrent(process: subprocess.Popen[bytes], n: int, depth: int, size: int | None) -> float:
    """n calls with ``depth`` outstanding at any time; calls per second."""
    assert process.stdin is not None and process.stdout is not None
    window = threading.Semaphore(depth)
    frames = [call(index, size) + b"\n" for index in range(n)]

    def writer() -> None:
        for frame in frames:
            window.acquire()
            send(process, frame)

    began = time.perf_counter()
    thread = threading.Thread(target=writer)
    thread.start()
    for _ in range(n):
        process.stdout.readline()
        window.release()
    elapsed = time.perf_counter() - began
    thread.join()
    return n / elapsed


def rss_with_tools(count: int, runs: str) -> float:
    process = spawn([sys.executable, "-m", "mcp_server", "gateway", "--", *UPSTREAM, str(count)], runs)
    initialize(process)
    listed = rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert len(listed["result"]["tools"]) == count
    status = Path(f"/proc/{process.pid}/status").read_text()
    rss = int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024
    process.communicate(b"", timeout=30)
    return rss


def compare(
    label: str,
    upstream: list[str],
    size: int | None,
    n_seq: int,
    n_conc: int,
    repeats: int,
    runs: str,
    *,
    floor: bool = False,
) -> float:
    """Direct vs through the gateway (and, with ``floor``, through the bare relays). Returns the
    gateway's added p50 in µs or, with ``floor``, the threaded bare relay's."""
    paths = {"direct": upstream, "gateway": [sys.executable, "-m", "mcp_server", "gateway", "--", *upstream]}
    if floor:
        paths["bare relay"] = [*BARE_RELAY, *upstream]
        paths["bare asyncio"] = [*BARE_RELAY, "--asyncio", *upstream]
    p50: dict[str, list[float]] = {name: [] for name in paths}
    p99: dict[str, list[float]] = {name: [] for name in paths}
    rate: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, command in paths.items():
            process = start(command, runs)
            latencies = sorted(sequential(process, n_seq, size))
            p50[name].append(latencies[len(latencies) // 2])
            p99[name].append(latencies[int(len(latencies) * 0.99)])
            rate[name].append(concurrent(process, n_conc, 16, size))
            process.communicate(b"", timeout=30)
    med = {
        k: {name: statistics.median(v) for name, v in d.items()}
        for k, d in (("p50", p50), ("p99", p99), ("rate", rate))
    }
    print(f"\nupstream: {label}; median of {repeats} runs")
    print(f"{'':12}{'p50 µs':>10}{'p99 µs':>10}{'calls/s @16':>14}{'added p50 µs':>14}")
    for name in paths:
        added_here = (med["p50"][name] - med["p50"]["direct"]) * 1e6
        print(
            f"{name:12}{med['p50'][name] * 1e6:10.0f}{med['p99'][name] * 1e6:10.0f}{med['rate'][name]:14.0f}"
            f"{'' if name == 'direct' else f'{added_here:14.0f}'}"
        )
    added = (med["p50"]["gateway"] - med["p50"]["direct"]) * 1e6
    ratio = med["rate"]["gateway"] / med["rate"]["direct"]
    print(f"added p50: {added:.0f} µs")
    print(f"throughput at concurrency 16: {ratio:.2f}x direct")
    if floor:  # issue 34's rows: each a ratio within one round, then the median and spread of the rounds
        rounds = range(repeats)
        by_round = {
            "calls/s @16, gateway / direct": [rate["gateway"][i] / rate["direct"][i] for i in rounds],
            "calls/s @16, gateway / bare relay (target ≥ 0.7)": [
                rate["gateway"][i] / rate["bare relay"][i] for i in rounds
            ],
            "bare relay / direct": [rate["bare relay"][i] / rate["direct"][i] for i in rounds],
            "added p50, gateway / bare relay (target ≤ 2)": [
                (p50["gateway"][i] - p50["direct"][i]) / max(p50["bare relay"][i] - p50["direct"][i], 1e-6)
                for i in rounds
            ],
        }
        for name, values in by_round.items():
            print(f"  {name}: {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
    return (med["p50"]["bare relay"] - med["p50"]["direct"]) * 1e6 if floor else added


class _Nowhere:
    """Both sides of an in-process gateway session: frames sent to either go nowhere."""

    name = "bench"
    ordered = True

    async def open(self) -> None:
        return None

    async def frames(self):  # type: ignore[no-untyped-def]
        return
        yield

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        return None

    async def close(self) -> int:
        return 0

    def relaying(self, frame: Frame, message: Message) -> None:
        return None

    async def passed(self, reply: Reply, message: Message | None) -> None:
        return None

    def cancelled(self, request_id: object) -> None:
        return None


def chain_per_frame(pause: float, calls: int, size: int, runs: str) -> tuple[float, float]:
    """The gateway's own work per frame (a ``GatewaySession``'s two paths: the chain, the verdict,
    the matching, the timers, the log on) in this process: the median µs of one tools/call request
    plus its result, back to back and with each frame after ``pause`` seconds idle. The two kinds
    take turns in blocks of 100 calls, so both see the same load on the machine; the first 10 calls
    of a block, still settling from the other kind, are not counted."""
    registry, config = SchemaRegistry(), GatewayConfig()
    events = EventLog(EventLogSettings(runs_dir=Path(runs), stream="bench-chain")).open()
    checks = GatewayRun(registry, config, new_report("bench", config, None, events), DEFAULT_MAX_FRAME_BYTES, None, events)
    tools = [tool(index) for index in range(20)]

    def exchange(request: dict) -> tuple[bytes, bytes]:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result_of(request, tools)}
        return json.dumps(request).encode(), json.dumps(reply).encode()

    opening = [INITIALIZE, {"jsonrpc": "2.0", "id": "list", "method": "tools/list"}]
    calls_made = [exchange(json.loads(call(index, size))) for index in range(1, calls + 1)]

    async def drive() -> tuple[list[float], list[float]]:
        nowhere = _Nowhere()
        gateway = GatewaySession(checks, nowhere, lambda _: nowhere, transport="stdio")
        session = gateway.session

        async def both(request: bytes, reply: bytes, idle: bool) -> float:
            took = 0.0
            for index, raw in enumerate((request, reply)):
                if idle:
                    time.sleep(pause)
                began = time.perf_counter()
                if index == 0:
                    await gateway.from_client(Frame(raw, "stdio", session))
                else:
                    await gateway.from_upstream(raw, None)  # as a transport hands it in
                took += time.perf_counter() - began
            return took

        for request in opening:
            await both(*exchange(request), False)
        spent: tuple[list[float], list[float]] = ([], [])
        for index, (request, reply) in enumerate(calls_made):
            idle = index // 100 % 2 == 1
            took = await both(request, reply, idle)
            if index % 100 >= 10:
                spent[idle].append(took)
        assert not len(session), "every call was answered"
        gateway.deadlines.close()
        return spent

    hot, idle = asyncio.run(drive())
    events.close()
    return statistics.median(hot) * 1e6, statistics.median(idle) * 1e6


def main() -> None:
    quick = "--quick" in sys.argv
    n_seq, n_conc, repeats, size = (300, 1000, 3, 1000) if quick else (2000, 5000, 5, 1000)
    runs = tempfile.mkdtemp(prefix="bench-gateway-")
    if "--instant" in sys.argv:  # issue 34's rows only: the instant upstream, its floors
        compare(
            f"instant upstream, tools/call with {size} B arguments",
            UPSTREAM,
            size,
            n_seq,
            n_conc,
            repeats,
            runs,
            floor=True,
        )
        return
    compare("conformance target (mcp SDK), tools/call test_simple_text", TARGET, None, n_seq, n_conc, repeats, runs)
    floor = compare(
        f"instant upstream, tools/call with {size} B arguments",
        UPSTREAM,
        size,
        n_seq,
        n_conc,
        repeats,
        runs,
        floor=True,
    )
    rss = rss_with_tools(500, runs)
    print(f"\ngateway RSS with 500 distinct tool schemas compiled: {rss:.1f} MiB (target ≤ 60)")
    calls = 500 if quick else 2000
    hot, idle = chain_per_frame(250e-6, 2 * calls, size, runs)
    print("\nthe gateway's own work in this process, one tools/call and its result (events on), median:")
    print(f"  back to back: {hot:.0f} µs; each frame after 250 µs idle: {idle:.0f} µs ({idle / hot:.1f}x)")
    print(f"  floor + chain after idle: {floor + idle:.0f} µs; floor + chain back to back: {floor + hot:.0f} µs")


if __name__ == "__main__":
    main()
