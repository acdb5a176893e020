"""The aggregate's cost (issue 33): a tools/call through one gateway in front of many servers vs
through a single-server gateway in front of the same server, same run; and a merged tools/list of
three servers with 100 tools each.

Paths, each a fresh process per repeat, driven by the same buffered client as bench_gateway.py:
``gateway`` (``mcp-server gateway -- UPSTREAM``), ``aggregate 1`` (the same upstream as the only
server of an aggregate, unprefixed) and ``aggregate 3`` (three such servers, the calls to one of
them). Upstreams: bench/fast_upstream.py (answers at once: the gateways' own cost is all there is)
and the conformance target (an MCP server written with the official SDK, as users run them).
Prints medians of repeats, their spread (lowest-highest), and same-run ratios to the single-server
gateway. The list: ``tools/list`` round trips through ``aggregate 3`` (3 x 100 tools, one page) vs
a single-server gateway in front of one server of 300 tools.
Usage: python bench/bench_aggregate.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_gateway import TARGET, UPSTREAM, concurrent, rpc, send, sequential, spawn  # noqa: E402

GATEWAY = [sys.executable, "-m", "mcp_server", "gateway"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def aggregate(folder: Path, upstreams: dict[str, list[str]], *, unprefixed: str | None = None) -> list[str]:
    """The gateway command for an aggregate of ``upstreams`` (name → command); the server
    ``unprefixed`` keeps its tools' own names (the calls name them so)."""
    servers = {
        name: {"command": command[0], "args": command[1:], **({"prefix": ""} if name == unprefixed else {})}
        for name, command in upstreams.items()
    }
    path = folder / f"aggregate-{'-'.join(upstreams)}-{len(list(folder.iterdir()))}.json"
    path.write_text(json.dumps({"servers": servers, "aggregate": {"page_size": 1000}}))
    return [*GATEWAY, "--config", str(path)]


def opened(command: list[str], runs: str) -> object:
    process = spawn(command, runs)
    rpc(process, INITIALIZE)
    send(process, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    rpc(process, {"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    return process


def spread(values: list[float], scale: float = 1.0, digits: int = 0) -> str:
    """Median (lowest-highest) of repeats."""
    return (
        f"{statistics.median(values) * scale:.{digits}f} "
        f"({min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f})"
    )


def calls(label: str, paths: dict[str, list[str]], size: int | None, counts: tuple[int, int, int], runs: str) -> None:
    """Sequential p50 and throughput at concurrency 16 per path, repeated; ratios to ``gateway``."""
    n_seq, n_conc, repeats = counts
    p50: dict[str, list[float]] = {name: [] for name in paths}
    rate: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, command in paths.items():
            process = opened(command, runs)
            latencies = sorted(sequential(process, n_seq, size))  # type: ignore[arg-type]
            p50[name].append(latencies[len(latencies) // 2])
            rate[name].append(concurrent(process, n_conc, 16, size))  # type: ignore[arg-type]
            process.communicate(b"", timeout=30)  # type: ignore[attr-defined]
    base_p50, base_rate = statistics.median(p50["gateway"]), statistics.median(rate["gateway"])
    print(f"\n{label}: tools/call, median (lowest-highest) of {repeats} runs")
    print(f"{'':14}{'p50 µs':>22}{'calls/s @16':>24}{'p50 xgateway':>14}{'rate xgateway':>15}")
    for name in paths:
        ratio_p50 = statistics.median(p50[name]) / base_p50
        ratio_rate = statistics.median(rate[name]) / base_rate
        print(f"{name:14}{spread(p50[name], 1e6):>22}{spread(rate[name]):>24}{ratio_p50:14.2f}{ratio_rate:15.2f}")


def listing(paths: dict[str, list[str]], n: int, repeats: int, runs: str) -> None:
    """``tools/list`` round trips per path (one page each), repeated."""
    taken: dict[str, list[float]] = {name: [] for name in paths}
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        for name, command in paths.items():
            process = opened(command, runs)
            latencies = []
            for index in range(n):
                began = time.perf_counter()
                reply = rpc(process, {"jsonrpc": "2.0", "id": f"l{index}", "method": "tools/list"})  # type: ignore[arg-type]
                latencies.append(time.perf_counter() - began)
            sizes[name] = len(reply["result"]["tools"])
            taken[name].append(sorted(latencies)[n // 2])
            process.communicate(b"", timeout=30)  # type: ignore[attr-defined]
    base = statistics.median(taken["gateway, 1 x 300"])
    print(f"\ntools/list, p50 µs, median (lowest-highest) of {repeats} runs")
    for name in paths:
        ratio = statistics.median(taken[name]) / base
        print(f"{name:24}{sizes[name]:5} tools {spread(taken[name], 1e6):>22}   {ratio:.2f}x")


def main() -> None:
    quick = "--quick" in sys.argv
    counts = (300, 1000, 3) if quick else (2000, 5000, 5)
    with tempfile.TemporaryDirectory() as runs:
        folder = Path(runs)
        for label, upstream, size in (("fast upstream", UPSTREAM, 200), ("SDK server", TARGET, None)):
            paths = {
                "gateway": [*GATEWAY, "--", *upstream],
                "aggregate 1": aggregate(folder, {"one": upstream}, unprefixed="one"),
                "aggregate 3": aggregate(
                    folder, {"one": upstream, "two": UPSTREAM, "three": UPSTREAM}, unprefixed="one"
                ),
            }
            fewer = counts if upstream is UPSTREAM else (counts[0] // 4, counts[1] // 4, counts[2])
            calls(label, paths, size, fewer, runs)
        hundred = [*UPSTREAM, "100"]
        lists = {
            "gateway, 1 x 300": [*GATEWAY, "--", *UPSTREAM, "300"],
            "aggregate, 3 x 100": aggregate(folder, {"a": hundred, "b": hundred, "c": hundred}),
        }
        listing(lists, 50 if quick else 200, counts[2], runs)


if __name__ == "__main__":
    main()
