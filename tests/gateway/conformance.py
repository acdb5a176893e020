"""Running the official conformance suite (`@modelcontextprotocol/conformance`, npm) against a server
served directly or behind the gateway, and the expected results it is compared with (one file per
suite version under `fixtures/conformance/`); and one of its client scenarios against a client
command. Shared by the conformance tests; holds no test.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..conftest import ROOT
from ..processes import exclusive
from .gateways import started_gateway

FIXTURES = ROOT / "fixtures" / "conformance"
WAIT = 60.0
SUITE_TIMEOUT = 600.0
CLIENT_TIMEOUT = 120.0  # one client scenario: the suite's server, the client, and its gateway
# The suite's summary names the scenarios a requirement set runs without scoring: `  ✗ name (reason)`.
NOT_SCORED_LINE = re.compile(r"^\s+[✓✗]\s+(\S+)\s+\(([^)]+)\)$")


@contextmanager
def gateway(tmp_path: Path, upstream: list[str], *options: str) -> Iterator[str]:
    """The URL of the gateway's HTTP front before ``upstream`` (a command), or with ``options``
    (`--upstream URL`), while it runs."""
    arguments = ["--listen", "http://127.0.0.1:0/mcp", "--idle-timeout", "5", *options]
    if upstream:
        arguments += ["--", *upstream]
    with started_gateway(tmp_path, *arguments, stderr=tmp_path / "gateway.stderr") as (_, url):
        yield url


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


def run_client(suite: list[str], client: list[str], scenario: str, out: Path, env: dict[str, str]) -> str:
    """One client scenario of the suite (`conformance client`), ``client`` the command it runs (the
    suite appends its server's URL): pass (no failure, no warning), warning, or fail (a failure, or
    no check written at all)."""
    subprocess.run(
        [*suite, "client", "--command", shlex.join(client), "--scenario", scenario, "-o", str(out)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=CLIENT_TIMEOUT,
        env=env,
    )
    statuses = {check["status"] for path in out.rglob("checks.json") for check in json.loads(path.read_text())}
    return "fail" if "FAILURE" in statuses or not statuses else "warning" if "WARNING" in statuses else "pass"


def results_file(suite: str) -> Path:
    """The expected results of one suite version: `fixtures/conformance/<name>@<version>.json`."""
    return FIXTURES / f"{suite.rsplit('/', 1)[-1]}.json"


def record(suite: str, key: str, found: SuiteRun, revision: str | None, packages: list[str]) -> None:
    """``found`` as run ``key``'s results in the suite's file (``MCP_UPDATE_CONFORMANCE=1``), beside the
    other runs' (each run's test records its own, parallel workers one at a time)."""
    path = results_file(suite)
    with exclusive(ROOT / ".cache" / "conformance-results.lock"):  # one worker at a time writes
        document: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        document["packages"] = packages
        document.setdefault("runs", {})[key] = found.results
        not_scored = document.setdefault("not_scored", {})
        if revision is not None:
            not_scored[revision] = found.not_scored
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
