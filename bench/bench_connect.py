"""How long a session takes to connect, direct and through the gateway (issue 29), in one run.

The official SDK client connects (its handshake, in its default mode the `server/discover` probe
first) and lists the tools once: to a STDIO server it starts itself (our FastMCP server, and
server-everything from npm), direct and through `mcp-server gateway` (which starts the server as
its child); and to server-everything over Streamable HTTP, direct and through `gateway --upstream`
over STDIO. The paths take turns, round after round, so each sees the same machine; the medians
and the spread (min-max) are printed, with the ratio gateway / direct.
Every process runs as installed, its bytecode compiled once before the first round (the environment may
say not to write bytecode: then each start would compile the package anew, which no install does).
Usage: python bench/bench_connect.py [--rounds N] [--quick] [--mode auto|legacy]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp.client.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from tests.node_tools import SERVER_EVERYTHING, node_command  # noqa: E402

OWN = [sys.executable, str(ROOT / "tests" / "upstreams" / "matrix_server.py")]
GATEWAY = [sys.executable, "-m", "mcp_server", "gateway"]


PYCACHE = tempfile.mkdtemp(prefix="bench-connect-pycache-")


def env(runs: str) -> dict[str, str]:
    """Every process as installed: its bytecode compiled once (as pip does on install), not on each start."""
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {
        **environ,
        "PYTHONPATH": str(ROOT),
        "PYTHONPYCACHEPREFIX": PYCACHE,
        "MCP_RUNS_DIR": runs,
        "MCP_READY_FILE": f"{runs}/ready",
    }


def compile_bytecode() -> None:
    """The package's and the test servers' bytecode, compiled before the first round (both paths alike)."""
    command = [sys.executable, "-m", "compileall", "-q", str(ROOT / "mcp_server"), str(ROOT / "tests" / "upstreams")]
    subprocess.run(command, env=env(PYCACHE), check=True, stdout=subprocess.DEVNULL)


def stdio(command: list[str], runs: str) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=env(runs))


async def connect(target: Any, mode: str) -> float:
    """Seconds from nothing to the first `tools/list` answered (the session then closed)."""
    began = time.perf_counter()
    async with Client(target, mode=mode, read_timeout_seconds=60) as client:  # type: ignore[arg-type]
        await client.list_tools()
        took = time.perf_counter() - began
    return took


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_everything(runs: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [*node_command(SERVER_EVERYTHING, "mcp-server-everything"), "streamableHttp"]
    process = subprocess.Popen(
        command, env={**env(runs), "PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, url
        time.sleep(0.05)
    raise SystemExit("server-everything never listened")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--mode", choices=["auto", "legacy"], action="append", help="the SDK client's modes (both)")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    runs = tempfile.mkdtemp(prefix="bench-connect-")
    compile_bytecode()
    everything = [*node_command(SERVER_EVERYTHING, "mcp-server-everything"), "stdio"]
    server, url = http_everything(runs)
    pairs = {
        "FastMCP (ours), STDIO": (stdio(OWN, runs), stdio([*GATEWAY, "--", *OWN], runs)),
        "server-everything, STDIO": (stdio(everything, runs), stdio([*GATEWAY, "--", *everything], runs)),
        "server-everything, HTTP": (url, stdio([*GATEWAY, "--upstream", url], runs)),
    }
    try:
        for mode in args.mode or ("auto", "legacy"):
            print(f"\nSDK client mode {mode!r}: seconds to connect and list tools, median (min-max) of {rounds}")
            for name, (direct, gated) in pairs.items():
                times: dict[str, list[float]] = {"direct": [], "gateway": []}
                for _ in range(rounds):
                    times["direct"].append(asyncio.run(connect(direct, mode)))
                    times["gateway"].append(asyncio.run(connect(gated, mode)))
                medians = {key: statistics.median(values) for key, values in times.items()}
                spread = {key: f"{min(values):.3f}-{max(values):.3f}" for key, values in times.items()}
                added = [g - d for d, g in zip(times["direct"], times["gateway"], strict=True)]  # per round
                print(
                    f"  {name:28} direct {medians['direct']:.3f} ({spread['direct']})"
                    f"  gateway {medians['gateway']:.3f} ({spread['gateway']})"
                    f"  ratio {medians['gateway'] / medians['direct']:.2f}"
                    f"  added {statistics.median(added):.3f} s ({min(added):.3f}-{max(added):.3f}; target ≤ 0.1)"
                )
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
