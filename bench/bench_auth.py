"""What checking the caller's token costs the gateway's HTTP front (issue 31), same run, same upstream.

Three gateways before `bench/fast_upstream.py` (answers at once: the front's own cost shows): no
authentication (loopback), `--auth tokens:FILE` (a file of 100 tokens, the last one used), and
`--auth jwt:ISSUER` (the test authorization server `tests/upstreams/auth_server.py`, an RS256 token
for the gateway's URL). A raw HTTP/1.1 client on keep-alive connections sends `tools/call`:
sequential round trips for p50/p99, then calls/s with 16 in flight. The three take turns within each
repeat; prints the median and the spread (lowest, highest) of the repeats, and the ratios against
no authentication.
Usage: python bench/bench_auth.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_gateway_http import FAST, WARM_UP, HttpConnection, call, free_port, initialize, serve, stop

ROOT = Path(__file__).resolve().parent.parent
AUTH_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "auth_server.py")]
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


async def run(url: str, authorization: str | None, n: int, depth: int) -> tuple[float, float, float]:
    """p50 and p99 of ``n`` sequential calls (after a warm-up), then calls/s with ``depth`` in flight."""
    first = await HttpConnection.open(url)
    first.authorization = authorization
    status, headers, _ = await first.post(initialize())
    assert status == 200, status
    session_id = headers["mcp-session-id"]
    first.session_id = session_id
    await first.post(INITIALIZED)
    connections = [first] + [await HttpConnection.open(url) for _ in range(depth - 1)]
    for connection in connections:
        connection.session_id, connection.authorization = session_id, authorization
    for index in range(WARM_UP):
        await first.post(call(-index - 1, "fast"))
    latencies = []
    for index in range(n):
        began = time.perf_counter()
        status, _, payload = await first.post(call(index + 1, "fast"))
        latencies.append(time.perf_counter() - began)
        assert status == 200 and b'"result"' in payload, payload[:200]
    counter = iter(range(n))

    async def worker(connection: HttpConnection) -> None:
        for index in counter:
            status, _, payload = await connection.post(call(n + index + 1, "fast"))
            assert status == 200 and b'"result"' in payload, payload[:200]

    began = time.perf_counter()
    await asyncio.gather(*(worker(connection) for connection in connections))
    rate = n / (time.perf_counter() - began)
    for connection in connections:
        connection.close()
    ordered = sorted(latencies)
    return ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)], rate


def mint(issuer: str, audience: str) -> str:
    body = json.dumps({"claims": {"aud": audience, "scope": "mcp"}, "seconds": 3600}).encode()
    asked = urllib.request.Request(f"{issuer}/testing/mint", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(asked, timeout=30) as answer:
        return str(json.loads(answer.read())["token"])


def admit_cost(tokens: list[str], issuer: str, keys: object) -> dict[str, float]:
    """The check alone, in process: µs per ``FrontAuth.admit`` (median of 7 runs of 2000)."""
    from mcp_server.execution.access import FrontAuth, JwtIssuer, StaticTokens

    folder = Path(tempfile.mkdtemp(prefix="bench-auth-admit-"))
    (folder / "tokens").write_text("\n".join(tokens) + "\n")
    resource = "http://127.0.0.1:1/mcp"
    static = FrontAuth(check=StaticTokens.load(folder / "tokens"), resource=resource)
    jwt_check = JwtIssuer(issuer, resource)
    jwt_check._keys = keys  # fetched once, as a running front holds them
    signed = FrontAuth(check=jwt_check, resource=resource)
    token = mint(issuer, resource)

    async def per_call(auth: FrontAuth, header: str, fresh: bool) -> float:
        runs = []
        for _ in range(7):
            began = time.perf_counter()
            for _ in range(2000):
                if fresh:
                    jwt_check._valid.clear()  # every call checks the signature again
                await auth.admit({"authorization": header})
            runs.append((time.perf_counter() - began) / 2000 * 1e6)
        return statistics.median(runs)

    async def measure() -> dict[str, float]:
        return {
            "tokens (100 in the file)": await per_call(static, f"Bearer {tokens[-1]}", False),
            "jwt, seen before (cached)": await per_call(signed, f"Bearer {token}", False),
            "jwt, signature checked": await per_call(signed, f"Bearer {token}", True),
        }

    return asyncio.run(measure())


def main() -> None:
    n, repeats, depth = (300, 1, 16) if "--quick" in sys.argv else (2000, 5, 16)
    folder = Path(tempfile.mkdtemp(prefix="bench-auth-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env.update(PYTHONPATH=str(ROOT), MCP_RUNS_DIR=str(folder), MCP_READY_FILE=str(folder / "ready"))
    tokens = [f"bench-token-{index:04d}-of-the-file" for index in range(100)]
    (folder / "tokens").write_text("\n".join(tokens) + "\n")
    as_port = free_port()
    issuer = f"http://127.0.0.1:{as_port}"
    authority = serve([*AUTH_SERVER, str(as_port)], f"{issuer}/", env)
    modes = {"none": [], "tokens": ["--auth", f"tokens:{folder / 'tokens'}"], "jwt": ["--auth", f"jwt:{issuer}/"]}
    found: dict[str, dict[str, list[float]]] = {mode: {"p50": [], "p99": [], "rate": []} for mode in modes}
    try:
        for _ in range(repeats):
            for mode, options in modes.items():
                url = f"http://127.0.0.1:{free_port()}/mcp"
                command = [sys.executable, "-m", "mcp_server", "gateway", "--listen", url, *options, "--", *FAST]
                gateway = serve(command, url, env)
                bearer = {"none": None, "tokens": tokens[-1], "jwt": mint(issuer, url) if mode == "jwt" else None}[mode]
                try:
                    p50, p99, rate = asyncio.run(run(url, None if bearer is None else f"Bearer {bearer}", n, depth))
                finally:
                    stop(gateway)
                for key, value in (("p50", p50), ("p99", p99), ("rate", rate)):
                    found[mode][key].append(value)
        with urllib.request.urlopen(f"{issuer}/jwks.json", timeout=30) as answer:
            from joserfc.jwk import KeySet

            admitted = admit_cost(tokens, issuer, KeySet.import_key_set(json.loads(answer.read())))
    finally:
        stop(authority)
    print("the check alone, in process (µs per request):")
    for name, cost in admitted.items():
        print(f"  {name:28}{cost:8.1f}")
    print(f"tools/call through the gateway's HTTP front, {n} calls, {repeats} repeats: median (lowest-highest)")
    print(f"{'':8}{'p50 µs':>22}{'p99 µs':>22}{'calls/s @16':>24}")
    for mode in modes:
        cells = []
        for key, scale in (("p50", 1e6), ("p99", 1e6), ("rate", 1.0)):
            values = [v * scale for v in found[mode][key]]
            cells.append(f"{statistics.median(values):8.0f} ({min(values):.0f}-{max(values):.0f})")
        print(f"{mode:8}" + "".join(f"{cell:>22}" for cell in cells))
    for mode in ("tokens", "jwt"):
        p50 = statistics.median(found[mode]["p50"]) / statistics.median(found["none"]["p50"])
        rate = statistics.median(found[mode]["rate"]) / statistics.median(found["none"]["rate"])
        print(f"{mode} vs none: p50 {p50:.2f}x, calls/s {rate:.2f}x")


if __name__ == "__main__":
    main()
