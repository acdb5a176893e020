"""What the event log costs the in-process chain (issue 7, Speed), from one run.

The same corpus as bench_spine.py through the chain with the JSONL event log on and off,
alternating, medians of repeats; the ratio is same-run. Target: logging costs <= 15 %.
Usage: python bench/bench_events.py [--quick]
"""

from __future__ import annotations

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

from mcp_server.events import EventLog, EventLogSettings  # noqa: E402
from mcp_server.registry import SchemaRegistry  # noqa: E402


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 5 if quick else 9
    frames, tools = build(1000 if quick else 4000)
    registry = SchemaRegistry()
    rates: dict[str, list[float]] = {"off": [], "on": []}
    latencies: dict[str, list[float]] = {"off": [], "on": []}
    written = 0
    with tempfile.TemporaryDirectory() as runs:
        run_chain(frames, tools, registry)  # warm-up
        for _ in range(repeats):
            rate, lat = run_chain(frames, tools, registry)
            rates["off"].append(rate)
            latencies["off"] = lat
            log = EventLog(EventLogSettings(runs_dir=Path(runs), stream="bench")).open()
            time.sleep(1.0)  # the writer process has started: a long-running server's steady state
            rate, lat = run_chain(frames, tools, registry, events=log)
            path = log.close()  # the writer finishes what is queued: no event is dropped
            written = sum(1 for _ in path.open("rb"))
            rates["on"].append(rate)
            latencies["on"] = lat
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    print(f"corpus: {len(frames)} frames at {VERSION}; medians of {repeats} alternating runs")
    print(f"{'':34}{'frames/s':>12}{'p50 µs':>10}{'p99 µs':>10}")
    for name, rate in (("off", off), ("on", on)):
        p50, p99 = percentiles(latencies[name])
        print(f"{'chain, event log ' + name:34}{rate:12.0f}{p50 * 1e6:10.1f}{p99 * 1e6:10.1f}")
    print(f"events in the last log file: {written} (frames: {len(frames)})")
    print(f"logging on / off: {on / off:.2f}; cost {100 * (1 - on / off):.1f} % of throughput (target <= 15 %)")


if __name__ == "__main__":
    main()
