"""The official conformance suite (`@modelcontextprotocol/conformance`, npm) through the HTTP gateway
(issue 9), with a STDIO upstream and with a Streamable HTTP one (`--upstream URL`, issue 18).

Every run's scenario results are compared with `fixtures/conformance/expected.json`: a scenario
that regresses fails, and so does one that starts passing until the file is updated
(`MCP_UPDATE_CONFORMANCE=1 pytest -m conformance` rewrites it; review the diff).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from ..conftest import ROOT, server_env
from ..node_tools import CONFORMANCE, CONFORMANCE_NEXT, SERVER_EVERYTHING, node_command, npm_bin

pytestmark = pytest.mark.conformance

EXPECTED = ROOT / "fixtures" / "conformance" / "expected.json"
TARGET = [sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_target.py")]
WAIT = 60.0
SUITE_TIMEOUT = 600.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            assert process.poll() is None, f"{url}: the server exited {process.returncode}"
            assert time.monotonic() < deadline, f"{url}: the server never listened"
            time.sleep(0.05)


@contextmanager
def running(command: list[str], url: str, env: dict[str, str]) -> Iterator[str]:
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        wait_listening(process, url)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(WAIT)


def gateway(tmp_path: Path, upstream: list[str], *options: str) -> tuple[list[str], str, dict[str, str]]:
    """The gateway's HTTP front before ``upstream`` (a command), or with ``options`` (`--upstream URL`)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "mcp_server", "gateway", "--listen", url, "--idle-timeout", "5", *options]
    if upstream:
        command += ["--", *upstream]
    return command, url, server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))


def run_suite(suite: list[str], url: str, out: Path, *extra: str) -> dict[str, str]:
    """scenario → pass (no failure, no warning), warning, or fail, from the suite's checks.json files."""
    subprocess.run(
        [*suite, "server", "--url", url, "-o", str(out), *extra],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SUITE_TIMEOUT,
    )
    results = {}
    for checks_file in sorted(out.glob("server-*/checks.json")):
        scenario = checks_file.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        statuses = {check["status"] for check in json.loads(checks_file.read_text())}
        results[scenario] = "fail" if "FAILURE" in statuses else "warning" if "WARNING" in statuses else "pass"
    assert results, f"the suite wrote no results for {url}"
    return dict(sorted(results.items()))


def test_the_conformance_suite_gives_the_same_results_through_the_gateway_as_direct(tmp_path: Path) -> None:
    """Issue 9: the active server suite through `gateway --listen http://…` equals the direct baseline."""
    release = node_command(CONFORMANCE, "conformance")
    next_line = node_command(CONFORMANCE_NEXT, "conformance")
    everything = str(npm_bin(SERVER_EVERYTHING, "mcp-server-everything"))
    env = server_env(tmp_path)
    actual: dict[str, dict[str, str]] = {}
    port = free_port()
    with running([*TARGET, "--http", str(port)], f"http://127.0.0.1:{port}/mcp", env) as url:
        actual["release/target/direct"] = run_suite(release, url, tmp_path / "r-d")
        actual["pre-release/target/direct"] = run_suite(next_line, url, tmp_path / "p-d")
        actual["pre-release-2026/target/direct"] = run_suite(
            next_line, url, tmp_path / "p26-d", "--spec-version", "2026-07-28"
        )
        # Every 2026-07-28 scenario, pending ones included: not all pass, but the same ones must.
        actual["pre-release-2026-all/target/direct"] = run_suite(
            next_line, url, tmp_path / "p26a-d", "--suite", "all", "--spec-version", "2026-07-28"
        )
    # The target over Streamable HTTP behind `gateway --upstream`, sending its sampling and elicitation
    # requests on the session's GET stream (issue 18): the same results as behind a STDIO upstream.
    port = free_port()
    standalone = [*TARGET, "--http", str(port), "--standalone"]
    with running(standalone, f"http://127.0.0.1:{port}/mcp", env) as upstream:
        command, gateway_url, gateway_env = gateway(tmp_path, [], "--upstream", upstream)
        with running(command, gateway_url, gateway_env) as url:
            actual["release/target/upstream"] = run_suite(release, url, tmp_path / "r-u")
            actual["pre-release/target/upstream"] = run_suite(next_line, url, tmp_path / "p-u")
            actual["pre-release-2026/target/upstream"] = run_suite(
                next_line, url, tmp_path / "p26-u", "--spec-version", "2026-07-28"
            )
            actual["pre-release-2026-all/target/upstream"] = run_suite(
                next_line, url, tmp_path / "p26a-u", "--suite", "all", "--spec-version", "2026-07-28"
            )
    command, gateway_url, gateway_env = gateway(tmp_path, TARGET)
    with running(command, gateway_url, gateway_env) as url:
        actual["release/target/gateway"] = run_suite(release, url, tmp_path / "r-g")
        actual["pre-release/target/gateway"] = run_suite(next_line, url, tmp_path / "p-g")
        actual["pre-release-2026/target/gateway"] = run_suite(
            next_line, url, tmp_path / "p26-g", "--spec-version", "2026-07-28"
        )
        actual["pre-release-2026-all/target/gateway"] = run_suite(
            next_line, url, tmp_path / "p26a-g", "--suite", "all", "--spec-version", "2026-07-28"
        )
    port = free_port()
    with running([everything, "streamableHttp"], f"http://127.0.0.1:{port}/mcp", {**env, "PORT": str(port)}) as url:
        actual["release/everything/direct"] = run_suite(release, url, tmp_path / "e-d")
    command, gateway_url, gateway_env = gateway(tmp_path, [everything, "stdio"])
    with running(command, gateway_url, gateway_env) as url:
        actual["release/everything/gateway"] = run_suite(release, url, tmp_path / "e-g")

    if os.environ.get("MCP_UPDATE_CONFORMANCE") == "1":
        EXPECTED.parent.mkdir(parents=True, exist_ok=True)
        document = {"packages": [CONFORMANCE, CONFORMANCE_NEXT, SERVER_EVERYTHING], "runs": actual}
        EXPECTED.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    expected = json.loads(EXPECTED.read_text())
    assert expected["packages"] == [CONFORMANCE, CONFORMANCE_NEXT, SERVER_EVERYTHING]
    for line in ("release", "pre-release", "pre-release-2026", "pre-release-2026-all"):
        assert actual[f"{line}/target/gateway"] == actual[f"{line}/target/direct"], line
        assert actual[f"{line}/target/upstream"] == actual[f"{line}/target/gateway"], line
    assert all(result == "pass" for result in actual["release/target/gateway"].values())
    direct_passes = {s for s, result in actual["release/everything/direct"].items() if result == "pass"}
    assert direct_passes <= {s for s, result in actual["release/everything/gateway"].items() if result == "pass"}
    assert actual == expected["runs"]
