"""What a call through an aggregate costs the gateway beyond a single-server gateway (issue 33), in
one process, with no I/O: the same client and the same upstream, which answers at once in memory.

Each round drives 5,000 sequential ``tools/call`` exchanges through a gateway session (the NDJSON
client side of the STDIO front, the real ``GatewaySession``) whose upstream is, in turn: the
upstream itself (``gateway``), an aggregate of it alone under its own names (``aggregate 1``), and
under a prefix (``aggregate 1, prefixed``: each call renamed, serialised again). The upstream's own
work (it parses and answers) is in every path alike; the difference is the aggregate's. Rounds take
turns, so each path sees the same load. Prints medians (lowest-highest) of µs per exchange and the
difference to ``gateway``.
Usage: python bench/bench_route.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fast_upstream import result_of, tool  # noqa: E402

from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES  # noqa: E402
from mcp_server.gateway.aggregate.aggregate import Aggregate  # noqa: E402
from mcp_server.gateway.aggregate.member import Member  # noqa: E402
from mcp_server.gateway.aggregate.servers import AggregateOptions, ServerSpec  # noqa: E402
from mcp_server.gateway.bridge.upstream_side import UpstreamSide  # noqa: E402
from mcp_server.gateway.config import GatewayConfig  # noqa: E402
from mcp_server.gateway.ndjson_front import NdjsonClient  # noqa: E402
from mcp_server.gateway.reports import new_report  # noqa: E402
from mcp_server.gateway.session import GatewayRun  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402
from mcp_server.transport.connection import NdjsonConnection  # noqa: E402

TOOLS = [tool(index) for index in range(20)]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


class Instant:
    """The upstream in memory: each request answered at once (the fast upstream's answers)."""

    name = "instant"

    def __init__(self) -> None:
        self._out: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def open(self) -> None:
        return None

    def write_now(self, raw: bytes) -> bool:
        request = json.loads(raw)
        if "id" in request and "method" in request:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result_of(request, TOOLS)}
            self._out.put_nowait(json.dumps(reply).encode())
        return True

    async def send(self, raw: bytes, about: Any = None) -> None:
        self.write_now(raw)

    async def frames(self) -> AsyncIterator[tuple[bytes, None]]:
        while (raw := await self._out.get()) is not None:
            yield raw, None

    async def close(self) -> int:
        self._out.put_nowait(None)
        return 0


class Client:
    """The client's end of the STDIO front, in memory: a line in, the next line out."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.written: asyncio.Queue[bytes] = asyncio.Queue()

    async def next_chunk(self) -> bytes:
        return await self.lines.get()

    async def write(self, raw: bytes) -> None:
        self.written.put_nowait(raw)

    async def rpc(self, frame: bytes) -> bytes:
        self.lines.put_nowait(frame + b"\n")
        return await self.written.get()


def upstream(path: str, run: GatewayRun) -> Any:
    if path == "gateway":
        return Instant()
    spec = ServerSpec(name="fast", prefix="fast" if path.endswith("prefixed") else "", command=("fast",))

    def side() -> UpstreamSide:
        return UpstreamSide(run, "fast", server="fast", config=run.config, tool_schemas=True)

    return Aggregate([Member(0, spec, Instant, side)], AggregateOptions(), run, "aggregate of fast")


def call(index: int, prefix: str) -> bytes:
    arguments = {"text": "x" * 200, "count": index, "tags": ["a", "b"]}
    params = {"name": f"{prefix}tool_{index % 20}", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}).encode()


async def per_exchange(path: str, calls: int) -> float:
    """µs per exchange through one fresh session of ``path`` (after 200 calls to settle)."""
    registry, config = SchemaRegistry(), GatewayConfig()
    run = GatewayRun(registry, config, new_report("bench", config, None, None), DEFAULT_MAX_FRAME_BYTES)
    client = Client()
    connection = NdjsonConnection(client.next_chunk, client.write, name="stdio", max_frame_bytes=1 << 20)
    front = NdjsonClient(run, upstream(path, run), connection)
    stop = asyncio.Event()
    running = asyncio.ensure_future(front.run(stop))
    await client.rpc(json.dumps(INITIALIZE).encode())
    client.lines.put_nowait(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    assert b"tool_19" in await client.rpc(b'{"jsonrpc":"2.0","id":"list","method":"tools/list"}')
    prefix = "fast__" if path.endswith("prefixed") else ""
    frames = [call(index, prefix) for index in range(1, calls + 201)]
    for frame in frames[:200]:
        await client.rpc(frame)
    began = time.perf_counter()
    for frame in frames[200:]:
        reply = await client.rpc(frame)
    took = time.perf_counter() - began
    assert b'"length": 200' in reply, reply[:200]
    stop.set()
    await running
    return took / calls * 1e6


def main() -> None:
    rounds, calls = (3, 2000) if "--quick" in sys.argv else (9, 5000)
    paths = ("gateway", "aggregate 1", "aggregate 1, prefixed")
    taken: dict[str, list[float]] = {path: [] for path in paths}
    for _ in range(rounds):
        for path in paths:
            taken[path].append(asyncio.run(per_exchange(path, calls)))
    base = statistics.median(taken["gateway"])
    print(f"tools/call exchanges in process, µs each, median (lowest-highest) of {rounds} rounds of {calls}")
    for path in paths:
        values = taken[path]
        median = statistics.median(values)
        print(
            f"{path:24}{median:8.1f} ({min(values):.1f}-{max(values):.1f})"
            f"   +{median - base:5.1f} µs   {median / base:.2f}x"
        )


if __name__ == "__main__":
    main()
