"""What bridging the eras costs: tools/call round trips over STDIO, for a client of each era, direct
to the fast upstream of its own era, through `mcp-server gateway` to it, and through
`mcp-server gateway --bridge VERSION` to the fast upstream of the other era (bench/fast_upstream.py,
which answers at once, so the gateway's own cost is all that separates the paths).

Same run, the paths taking turns in each round. Prints, per client era, the median p50 of the rounds
and the bridge's added p50 over the gateway's own added p50 (target ≤ 1.5x), median and spread of
the rounds' ratios.
Usage: python bench/bench_bridge.py [--quick]
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

from bench_gateway import INITIALIZE, rpc, send, spawn  # noqa: E402

FAST = [sys.executable, str(ROOT / "bench" / "fast_upstream.py")]
GATEWAY = [sys.executable, "-m", "mcp_server", "gateway"]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
LEGACY, MODERN = "2025-11-25", "2026-07-28"

# client era → path → command: direct to its own era's upstream, the gateway before it, and the
# bridge before the other era's upstream.
PATHS = {
    LEGACY: {
        "direct": FAST,
        "gateway": [*GATEWAY, "--", *FAST],
        "bridged": [*GATEWAY, "--bridge", MODERN, "--", *FAST, "--modern"],
    },
    MODERN: {
        "direct": [*FAST, "--modern"],
        "gateway": [*GATEWAY, "--", *FAST, "--modern"],
        "bridged": [*GATEWAY, "--bridge", LEGACY, "--", *FAST],
    },
}


def request(era: str, request_id: int | str, method: str, params: dict | None = None) -> dict:
    """A request as a client of ``era`` sends it (2026-07-28: the per-request ``_meta`` envelope)."""
    params = dict(params or {})
    if era == MODERN:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def start(era: str, command: list[str], runs: str):  # type: ignore[no-untyped-def]
    process = spawn(command, runs)
    if era == LEGACY:
        assert "result" in rpc(process, INITIALIZE)
        send(process, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    listed = rpc(process, request(era, "list", "tools/list"))
    assert len(listed["result"]["tools"]) == 20, listed
    return process


def p50(era: str, process, calls: int) -> float:  # type: ignore[no-untyped-def]
    """The median round trip of ``calls`` tools/call requests, one at a time."""
    assert process.stdout is not None
    latencies = []
    for index in range(calls):
        arguments = {"text": "x" * 200, "count": index, "tags": ["a", "b"]}
        frame = json.dumps(request(era, index, "tools/call", {"name": f"tool_{index % 20}", "arguments": arguments}))
        began = time.perf_counter()
        send(process, frame.encode() + b"\n")
        reply = json.loads(process.stdout.readline())
        latencies.append(time.perf_counter() - began)
        assert "result" in reply, reply
    return statistics.median(latencies)


def rounds(era: str, calls: int, repeats: int, runs: str) -> dict[str, list[float]]:
    measured: dict[str, list[float]] = {name: [] for name in PATHS[era]}
    for _ in range(repeats):
        for name, command in PATHS[era].items():
            process = start(era, command, runs)
            p50(era, process, calls // 10)  # warm-up
            measured[name].append(p50(era, process, calls))
            process.communicate(b"", timeout=30)
    return measured


def report(era: str, measured: dict[str, list[float]]) -> None:
    ratios = [
        (bridged - direct) / (gateway - direct)
        for direct, gateway, bridged in zip(measured["direct"], measured["gateway"], measured["bridged"], strict=True)
    ]
    median = {name: statistics.median(values) * 1e6 for name, values in measured.items()}
    print(f"\n{era} client; median of {len(ratios)} rounds")
    for name, value in median.items():
        added = "" if name == "direct" else f"  added {value - median['direct']:6.0f} µs"
        print(f"  {name:8} p50 {value:7.0f} µs{added}")
    spread = f"{min(ratios):.2f}–{max(ratios):.2f}"
    print(f"  bridged added p50 / gateway added p50: {statistics.median(ratios):.2f} ({spread}) (target ≤ 1.5)")


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    calls, repeats = (300, 3) if quick else (2000, 5)
    with tempfile.TemporaryDirectory() as runs:
        for era in (LEGACY, MODERN):
            report(era, rounds(era, calls, repeats, runs))


if __name__ == "__main__":
    main()
