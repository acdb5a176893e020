"""The tool lockfile's and the trace context's cost in the gateway: same run, with and without.

Two views, each interleaved so both sides see the same load on the machine:
* processes: the gateway in front of bench/fast_upstream.py (20 tools), without and with
  `--lock` (the file `mcp-server lock` writes of it): p50 of `tools/call` and of `tools/list`;
* in this process: one `GatewaySession`'s work per `tools/call` and its result, without a lock,
  with the lock, and with the lock and a `_meta.traceparent` on the call (the gateway's span made,
  the call rewritten): the median µs.
Usage: python bench/bench_lock.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_gateway import INITIALIZE, UPSTREAM, _Nowhere, call, send, start  # noqa: E402
from fast_upstream import result_of, tool  # noqa: E402

from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES  # noqa: E402
from mcp_server.core.types import Frame  # noqa: E402
from mcp_server.gateway.config import GatewayConfig  # noqa: E402
from mcp_server.gateway.reports import new_report  # noqa: E402
from mcp_server.gateway.session import GatewayRun, GatewaySession  # noqa: E402
from mcp_server.registry.lockfile import Lockfile  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402

LIST = b'{"jsonrpc":"2.0","id":"l","method":"tools/list"}\n'
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def lockfile(folder: str) -> Path:
    path = Path(folder) / "bench.lock.json"
    command = [sys.executable, "-m", "mcp_server", "lock", "--output", str(path), "--", *UPSTREAM]
    subprocess.run(command, check=True, capture_output=True, env={"PYTHONPATH": str(ROOT), "MCP_RUNS_DIR": folder})
    return path


def round_trips(process: subprocess.Popen[bytes], frames: list[bytes]) -> list[float]:
    assert process.stdout is not None
    took = []
    for frame in frames:
        began = time.perf_counter()
        send(process, frame)
        process.stdout.readline()
        took.append(time.perf_counter() - began)
    return took


def processes(lock: Path, n: int, repeats: int, runs: str) -> None:
    gateway = [sys.executable, "-m", "mcp_server", "gateway"]
    paths = {"no lock": [*gateway, "--", *UPSTREAM], "--lock": [*gateway, "--lock", str(lock), "--", *UPSTREAM]}
    calls = [call(index, 1000) + b"\n" for index in range(n)]
    p50: dict[str, dict[str, list[float]]] = {name: {"tools/call": [], "tools/list": []} for name in paths}
    for _ in range(repeats):
        for name, command in paths.items():
            process = start(command, runs)
            p50[name]["tools/call"].append(statistics.median(round_trips(process, calls)))
            p50[name]["tools/list"].append(statistics.median(round_trips(process, [LIST] * (n // 4))))
            process.communicate(b"", timeout=30)
    print(f"\ngateway processes, fast upstream (20 tools); median of {repeats} runs' p50, µs")
    print(f"{'':10}{'tools/call':>12}{'tools/list':>12}")
    for name in paths:
        row = [statistics.median(p50[name][method]) * 1e6 for method in ("tools/call", "tools/list")]
        print(f"{name:10}{row[0]:12.0f}{row[1]:12.0f}")


def in_process(lock: Lockfile, calls: int) -> None:
    """A session's work per tools/call and its result: no lock, the lock, the lock and a trace."""
    registry, config = SchemaRegistry(), GatewayConfig()
    tools = [tool(index) for index in range(20)]
    kinds = {
        "no lock": (GatewayRun(registry, config, new_report("b", config, None, None), DEFAULT_MAX_FRAME_BYTES), False),
        "--lock": (
            GatewayRun(registry, config, new_report("b", config, None, None), DEFAULT_MAX_FRAME_BYTES, lock=lock),
            False,
        ),
        "--lock, traced": (
            GatewayRun(registry, config, new_report("b", config, None, None), DEFAULT_MAX_FRAME_BYTES, lock=lock),
            True,
        ),
    }

    def exchange(request: dict, traced: bool) -> tuple[bytes, bytes]:
        if traced and "params" in request:
            request = {**request, "params": {**request["params"], "_meta": {"traceparent": TRACEPARENT}}}
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result_of(request, tools)}
        return json.dumps(request).encode(), json.dumps(reply).encode()

    async def drive() -> dict[str, list[float]]:
        sessions = {}
        for name, (checks, traced) in kinds.items():
            nowhere = _Nowhere()
            gateway = GatewaySession(checks, nowhere, lambda _, side=nowhere: side, transport="stdio")
            for request in (INITIALIZE, {"jsonrpc": "2.0", "id": "list", "method": "tools/list"}):
                raw, reply = exchange(request, False)
                await gateway.from_client(Frame(raw, "stdio", gateway.session))
                await gateway.from_upstream(reply, len(reply))
            sessions[name] = (gateway, [exchange(json.loads(call(i, 1000)), traced) for i in range(1, calls + 1)])
        spent: dict[str, list[float]] = {name: [] for name in kinds}
        for block in range(0, calls, 100):  # the kinds take turns in blocks of 100 calls
            for name, (gateway, made) in sessions.items():
                for request, reply in made[block : block + 100]:
                    began = time.perf_counter()
                    await gateway.from_client(Frame(request, "stdio", gateway.session))
                    await gateway.from_upstream(reply, len(reply))
                    spent[name].append(time.perf_counter() - began)
        for gateway, _ in sessions.values():
            gateway.deadlines.close()
        return spent

    spent = asyncio.run(drive())
    print(f"\nin this process, one tools/call and its result, median of {calls} (log off), µs")
    for name, took in spent.items():
        print(f"{name:16}{statistics.median(took) * 1e6:8.1f}")


def main() -> None:
    quick = "--quick" in sys.argv
    n, repeats, calls = (400, 3, 2000) if quick else (2000, 5, 10000)
    runs = tempfile.mkdtemp(prefix="bench-lock-")
    path = lockfile(runs)
    processes(path, n, repeats, runs)
    in_process(Lockfile.load(path, SchemaRegistry()), calls)


if __name__ == "__main__":
    main()
