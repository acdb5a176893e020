"""The load balancer's hop, and what one gateway replica holds (issue 21), measured in one run.

HAProxy (the repository's deploy/haproxy/haproxy.cfg) before three `mcp-server gateway --listen
http://…` replicas. 1. p50 of `tools/call` on one stateful session, through HAProxy and straight to
the replica that owns the session, in alternating blocks (the same session, the same replica):
the hop's cost is the difference of the medians (target ≤ 150 µs). 2. calls/s of one replica at
16 in flight. 3. memory per session: RSS of a replica and its upstream processes before and after
opening sessions, with the SDK conformance target as the upstream (one Python process per session).
Usage: python bench/bench_lb.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_gateway_http import (  # noqa: E402
    FAST,
    TARGET,
    WARM_UP,
    HttpConnection,
    call,
    free_port,
    http_run,
    http_session,
    serve,
    stop,
)

CONFIG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
REPLICAS = 3
HOP_TARGET_US = 150.0


def start_pool(upstream: list[str], env: dict[str, str]) -> tuple[str, list[str], list[subprocess.Popen[bytes]]]:
    """Three replicas and HAProxy: the balancer's URL, the replicas' URLs, every process."""
    urls = [f"http://127.0.0.1:{free_port()}/mcp" for _ in range(REPLICAS)]
    processes = [
        serve([sys.executable, "-m", "mcp_server", "gateway", "--listen", url, "--", *upstream], url, env)
        for url in urls
    ]
    port = free_port()
    addresses = {f"MCP_GATEWAY_{i}": url.split("/")[2] for i, url in enumerate(urls, start=1)}
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        raise SystemExit("HAProxy is not installed: apt-get install haproxy")
    lb_url = f"http://127.0.0.1:{port}/mcp"
    lb_env = {**env, "MCP_LB_BIND": f"127.0.0.1:{port}", **addresses}
    processes.append(serve([haproxy, "-db", "-f", str(CONFIG)], lb_url, lb_env))
    return lb_url, urls, processes


async def owner_of(session_id: str, urls: list[str]) -> str:
    """The replica that owns the session: the one that does not answer 404."""
    for url in urls:
        connection = await HttpConnection.open(url)
        connection.session_id = session_id
        status, _, _ = await connection.post(call(-1, "fast"))
        connection.close()
        if status == 200:
            return url
    raise SystemExit("no replica owns the session")


async def hop(lb_url: str, urls: list[str], n: int, rounds: int) -> tuple[float, float]:
    """Median over rounds of each side's p50 (seconds): through the balancer, and direct."""
    session_id = await http_session(lb_url)
    direct_url = await owner_of(session_id, urls)
    sides = {"lb": await HttpConnection.open(lb_url), "direct": await HttpConnection.open(direct_url)}
    for connection in sides.values():
        connection.session_id = session_id
        for index in range(WARM_UP):
            await connection.post(call(-index - 2, "fast"))
    p50: dict[str, list[float]] = {"lb": [], "direct": []}
    for round_index in range(rounds):
        order = ("lb", "direct") if round_index % 2 == 0 else ("direct", "lb")
        for side in order:
            latencies = []
            for index in range(n):
                began = time.perf_counter()
                status, _, payload = await sides[side].post(call(index + 1, "fast"))
                latencies.append(time.perf_counter() - began)
                assert status == 200 and b'"result"' in payload, payload[:200]
            p50[side].append(statistics.median(latencies))
    for connection in sides.values():
        connection.close()
    return statistics.median(p50["lb"]), statistics.median(p50["direct"])


def tree_rss_kib(pid: int) -> tuple[int, int]:
    """RSS (KiB) of ``pid`` itself, and of its children (its upstreams; the log writer when there is one)."""

    def rss(process: str) -> int:
        for line in Path(f"/proc/{process}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            children.append(stat.parent.name)
    return rss(str(pid)), sum(rss(child) for child in children)


async def open_sessions(url: str, count: int) -> list[str]:
    return [await http_session(url) for _ in range(count)]


def target_replica(env: dict[str, str], count: int, n: int) -> tuple[float, float, float, float, float]:
    """One replica before the SDK target (one Python upstream per session): KiB per session (the
    gateway's part, the upstream's), calls/s at 16 in flight on one session, the idle replica's
    own KiB (the gateway and its log writer, before any session), and seconds to open a session
    (one after another: the upstream's start is most of it)."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    process = serve([sys.executable, "-m", "mcp_server", "gateway", "--listen", url, "--", *TARGET], url, env)
    try:
        own_before, children_before = tree_rss_kib(process.pid)
        began = time.perf_counter()
        asyncio.run(open_sessions(url, count))
        opening = (time.perf_counter() - began) / count
        time.sleep(1.0)  # the upstreams settle after their handshake (a measurement, not a wait for a result)
        own_after, children_after = tree_rss_kib(process.pid)
        _, rate = asyncio.run(http_run(url, n, 16, "target"))
    finally:
        stop(process)
    per_gateway, per_upstream = (own_after - own_before) / count, (children_after - children_before) / count
    return per_gateway, per_upstream, rate, own_before + children_before, opening


def main() -> None:
    quick = "--quick" in sys.argv
    n, rounds, sessions = (200, 4, 4) if quick else (500, 10, 10)
    runs = tempfile.mkdtemp(prefix="bench-lb-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env.update(PYTHONPATH=str(ROOT), MCP_RUNS_DIR=runs, MCP_READY_FILE=str(Path(runs) / "ready"))
    lb_url, urls, processes = start_pool(FAST, env)
    try:
        lb, direct = asyncio.run(hop(lb_url, urls, n, rounds))
        latencies, rate = asyncio.run(http_run(urls[0], n * 2, 16, "fast"))
    finally:
        for process in reversed(processes):
            stop(process)
    gateway_kib, upstream_kib, target_rate, idle_kib, opening = target_replica(env, sessions, n)
    added = (lb - direct) * 1e6
    print(f"tools/call p50, fast upstream, {n} calls x {rounds} alternating rounds (median of rounds)")
    print(f"  direct to the owning replica  {direct * 1e6:8.0f} µs")
    print(f"  through HAProxy               {lb * 1e6:8.0f} µs")
    verdict = "ok" if added <= HOP_TARGET_US else "over"
    print(f"  the hop adds                  {added:8.0f} µs (target ≤ {HOP_TARGET_US:.0f}: {verdict})")
    sequential = statistics.median(latencies) * 1e6
    print(f"one replica, 16 in flight, fast upstream: {rate:8.0f} calls/s (p50 one at a time {sequential:.0f} µs)")
    print(f"one replica, 16 in flight, SDK target upstream: {target_rate:8.0f} calls/s")
    print(f"an idle replica (the gateway and its log writer): {idle_kib / 1024:8.1f} MiB")
    print(f"opening a session (initialize through the replica, SDK target upstream): {opening * 1e3:.0f} ms")
    print(f"memory per session (SDK target upstream, {sessions} sessions):")
    print(f"  the gateway's part  {gateway_kib / 1024:8.1f} MiB")
    print(f"  its upstream        {upstream_kib / 1024:8.1f} MiB")
    print(f"  together            {(gateway_kib + upstream_kib) / 1024:8.1f} MiB")


if __name__ == "__main__":
    main()
