"""Running the official conformance suite (`@modelcontextprotocol/conformance`, npm) against a server
served directly or behind the gateway, and the expected results it is compared with (one file per
suite version under `fixtures/conformance/`). Shared by the conformance tests; holds no test.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..conftest import ROOT, server_env

TARGET = (sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_target.py"))
FIXTURES = ROOT / "fixtures" / "conformance"
WAIT = 60.0
SUITE_TIMEOUT = 600.0
# The suite's summary names the scenarios a requirement set runs without scoring: `  ✗ name (reason)`.
NOT_SCORED_LINE = re.compile(r"^\s+[✓✗]\s+(\S+)\s+\(([^)]+)\)$")


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
    """``command`` started, once it listens at ``url``; stopped on exit."""
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


@dataclass(frozen=True)
class SuiteRun:
    """What one suite run found: scenario → pass (no failure, no warning), warning or fail; and the
    scenarios its requirement set runs without scoring (scenario → the suite's reason)."""

    results: dict[str, str]
    not_scored: dict[str, str]


def run_suite(suite: list[str], url: str, out: Path, *extra: str) -> SuiteRun:
    """The suite's server scenarios against ``url``, from its checks.json files and its summary."""
    done = subprocess.run(
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
    summary = done.stdout.decode(errors="replace").split("Not scored for", 1)[1:]
    lines = summary[0].splitlines() if summary else []
    not_scored = {match[1]: match[2] for line in lines if (match := NOT_SCORED_LINE.match(line))}
    return SuiteRun(dict(sorted(results.items())), dict(sorted(not_scored.items())))


def results_file(suite: str) -> Path:
    """The expected results of one suite version: `fixtures/conformance/<name>@<version>.json`."""
    return FIXTURES / f"{suite.rsplit('/', 1)[-1]}.json"
