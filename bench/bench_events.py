"""What the event log costs the in-process chain (issue 7, Speed), from one run.

The same corpus as bench_spine.py through the chain with the JSONL event log on and off,
alternating (each goes first in every other pair, after the same pause), medians of repeats; the
ratio is same-run. Target: logging costs <= 5 % of the verdict path (issue 19).

Two readings of the cost: wall-clock throughput (the median of each adjacent off/on pair's
ratio, so that a burst of load on a shared machine falls on both sides of a pair), and this
process's CPU time per frame (every thread of it: the chain, the producer's sends and the timer),
which a stolen or descheduled core does not inflate. The writer process's own CPU is not in the
second reading; on a machine whose cores slow each other down it still shows in the first.
A third reading, the gateway's: one `GatewaySession` in this process driven through a
`tools/call` and its result at a time (bench_gateway.py's instant upstream), log on and off in
turn; this process's CPU per exchange and the share the log takes of it.
Usage: python bench/bench_events.py [--quick]
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_spine import percentiles, run_chain  # noqa: E402
from corpus import VERSION, build  # noqa: E402

from mcp_server.observe.events import EventLog, EventLogSettings  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402


def gateway_share(exchanges: int, rounds: int) -> tuple[float, float, list[float]]:
    """The gateway's own CPU µs per exchange with the log off and on (medians), and each round's share."""
    import asyncio
    import json

    import bench_gateway as bg
    from fast_upstream import result_of, tool

    from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES
    from mcp_server.core.types import Frame
    from mcp_server.gateway.config import GatewayConfig
    from mcp_server.gateway.reports import new_report
    from mcp_server.gateway.session import GatewayRun, GatewaySession

    registry, config, tools = SchemaRegistry(), GatewayConfig(), [tool(index) for index in range(20)]

    def exchange(request: dict) -> tuple[bytes, bytes]:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result_of(request, tools)}
        return json.dumps(request).encode(), json.dumps(reply).encode()

    opening = [exchange(bg.INITIALIZE), exchange({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})]
    calls = [exchange(json.loads(bg.call(index, 1000))) for index in range(1, exchanges + 1)]

    def once(runs: str, logged: bool) -> float:
        events = EventLog(EventLogSettings(runs_dir=Path(runs), stream="gateway")).open() if logged else None
        checks = GatewayRun(
            registry, config, new_report("bench", config, None, events), DEFAULT_MAX_FRAME_BYTES, None, events
        )

        async def drive() -> float:
            nowhere = bg._Nowhere()
            gateway = GatewaySession(checks, nowhere, lambda _: nowhere, transport="stdio")
            for request, reply in opening:
                await gateway.from_client(Frame(request, "stdio", gateway.session))
                await gateway.from_upstream(reply, None)
            began = time.process_time()
            for request, reply in calls:
                await gateway.from_client(Frame(request, "stdio", gateway.session))
                await gateway.from_upstream(reply, None)
            spent = time.process_time() - began
            gateway.deadlines.close()
            return spent / len(calls) * 1e6

        spent = asyncio.run(drive())
        if events is not None:
            events.close()
        return spent

    off: list[float] = []
    on: list[float] = []
    with tempfile.TemporaryDirectory() as runs:
        for _ in range(rounds):
            off.append(once(runs, False))
            on.append(once(runs, True))
    shares = [100 * (1 - a / b) for a, b in zip(off, on, strict=True)]
    return statistics.median(off), statistics.median(on), shares


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 5 if quick else 9
    frames, tools = build(1000 if quick else 4000)
    registry = SchemaRegistry()
    rates: dict[str, list[float]] = {"off": [], "on": []}
    cpu: dict[str, list[float]] = {"off": [], "on": []}  # this process's CPU seconds per frame
    latencies: dict[str, list[float]] = {"off": [], "on": []}
    written = 0
    writer_cpu: list[float] = []  # the writer process's CPU seconds per event, its start-up left out

    def measure(name: str, events: EventLog | None = None) -> None:
        began = time.process_time()
        rate, latencies[name] = run_chain(frames, tools, registry, events=events)
        cpu[name].append((time.process_time() - began) / len(frames))
        rates[name].append(rate)

    def children_cpu() -> float:  # of the writer processes ended so far
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    with tempfile.TemporaryDirectory() as runs:
        run_chain(frames, tools, registry)  # warm-up
        before = children_cpu()
        EventLog(EventLogSettings(runs_dir=Path(runs), stream="idle")).open().close()
        start_up = children_cpu() - before  # a writer that writes nothing: its start and its end
        for repeat in range(repeats):
            for name in ("off", "on") if repeat % 2 == 0 else ("on", "off"):  # neither always goes first
                log = EventLog(EventLogSettings(runs_dir=Path(runs), stream="bench")).open() if name == "on" else None
                time.sleep(0.5)  # the same pause before each: the writer process has started (steady state)
                before = children_cpu()
                measure(name, log)
                if log is not None:
                    path = log.close()  # the writer finishes what is queued before the next run: none is dropped
                    written = sum(1 for _ in path.open("rb"))
                    writer_cpu.append((children_cpu() - before - start_up) / written)
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    pairs = sorted(b / a for a, b in zip(rates["off"], rates["on"], strict=True))
    paired = statistics.median(pairs)
    cpu_off, cpu_on = statistics.median(cpu["off"]), statistics.median(cpu["on"])
    print(f"corpus: {len(frames)} frames at {VERSION}; medians of {repeats} alternating runs")
    print(f"{'':34}{'frames/s':>12}{'p50 µs':>10}{'p99 µs':>10}{'CPU µs/frame':>14}")
    for name, rate, per_frame in (("off", off, cpu_off), ("on", on, cpu_on)):
        p50, p99 = percentiles(latencies[name])
        print(f"{'chain, event log ' + name:34}{rate:12.0f}{p50 * 1e6:10.1f}{p99 * 1e6:10.1f}{per_frame * 1e6:14.1f}")
    print(f"events in the last log file: {written} (frames: {len(frames)})")
    print(f"logging on / off, wall clock (median of pairs): {paired:.2f}; cost {100 * (1 - paired):.1f} %", end="")
    print(" (target <= 5 %)")
    costs = [100 * (1 - ratio) for ratio in reversed(pairs)]  # the spread: how much one pair tells
    quartiles = statistics.quantiles(costs, n=4)
    print(f"  cost of each pair, lowest first: {' '.join(f'{c:.1f}' for c in costs)} %", end="")
    print(f" (quartiles {quartiles[0]:.1f} .. {quartiles[2]:.1f} %)")
    cpu_ratio = cpu_off / cpu_on
    print(f"the writer process: {statistics.median(writer_cpu) * 1e6:.2f} CPU µs per event (its start-up left out)")
    print(f"logging on / off, this process's CPU time: {cpu_ratio:.2f}; cost {100 * (1 - cpu_ratio):.1f} %")
    off_us, on_us, shares = gateway_share(2000 if quick else 5000, repeats)
    print(
        f"the gateway's own CPU per tools/call exchange: log off {off_us:.1f} µs, on {on_us:.1f} µs; the log's share"
        f" {statistics.median(shares):.1f} % ({min(shares):.1f} to {max(shares):.1f}; target ≤ 5 %)"
    )


if __name__ == "__main__":
    main()
