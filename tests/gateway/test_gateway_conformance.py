"""The official conformance suite (`@modelcontextprotocol/conformance`, npm) through the HTTP gateway
(issue 9), with a STDIO upstream and with a Streamable HTTP one (`--upstream URL`, issue 18), the
pre-release line by the requirement set of each spec revision (issue 22).

`RUNS` is the table of runs: a suite version, a requirement set, and where the suite connects. Each
suite version's results are compared with its own file, `fixtures/conformance/<name>@<version>.json`:
a scenario that regresses fails, and so does one that starts passing until the file is updated
(`MCP_UPDATE_CONFORMANCE=1 pytest -m conformance` rewrites them; review the diff).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import server_env
from ..node_tools import CONFORMANCE, CONFORMANCE_NEXT, SERVER_EVERYTHING, node_command, npm_bin
from .conformance import TARGET, SuiteRun, free_port, gateway, results_file, run_suite, running

pytestmark = pytest.mark.conformance

REVISIONS = ("2025-11-25", "2026-07-28")  # the pre-release line's requirement sets (`--requirements`)
# (requirement set, scenario) → why the gateway fails what the target passes served directly. A gap
# the gateway closes must leave this table: the test checks each still fails through the gateway.
GATEWAY_GAPS: dict[tuple[str, str], str] = {
    ("2026-07-28", "server-stateless"): "two of its checks call diagnostic tools the target does not list"
    " (test_streaming_elicitation, test_logging_tool) and take its answer to an unknown tool for a pass;"
    " the gateway refuses a tool its upstream does not list (tool_not_found; issue 30 row 9, ADR 26)",
}
# Scenarios of the release line that call a tool server-everything does not list: it answers with a
# tool result saying so, which the scenario takes for a pass; the gateway, which refuses a tool its
# upstream does not list (`tool_not_found`, -32602, as the MCP spec answers an unknown tool; issue
# 30 row 9, ADR 26), fails them. The test checks each still passes directly and fails through.
EVERYTHING_UNLISTED = {"tools-call-simple-text", "tools-call-error"}
# (requirement set, scenario) → why a bridged run fails what the target passes served directly: a
# feature of one era the other has not (ADR 24). Every other scenario passes through the bridge.
_ASKS_BY_REQUEST = "the tool asks its client by a server-to-client request, which a 2026-07-28 server cannot send"
_ASKS_BY_RESULT = "the tool asks by InputRequiredResult, which a 2025-11-25 server cannot answer with"
BRIDGE_GAPS = {
    ("2025-11-25", "tools-call-sampling"): _ASKS_BY_REQUEST,
    ("2025-11-25", "tools-call-elicitation"): _ASKS_BY_REQUEST,
    ("2025-11-25", "elicitation-sep1034-defaults"): _ASKS_BY_REQUEST,
    ("2025-11-25", "elicitation-sep1330-enums"): _ASKS_BY_REQUEST,
    ("2025-11-25", "resources-subscribe"): "resources/subscribe is not bridgeable (2026-07-28 has a stream for it)",
    ("2025-11-25", "resources-unsubscribe"): "resources/unsubscribe is not bridgeable, as resources/subscribe",
    **{
        ("2026-07-28", f"input-required-result-{name}"): _ASKS_BY_RESULT
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "non-tool-request",
            "result-type",
            "tampered-state",
            "capability-check",
            "ignore-extra-params",
            "missing-input-response",
        )
    },
    ("2026-07-28", "server-stateless"): "subscriptions/listen is not bridgeable to a 2025-11-25 server",
}


@dataclass(frozen=True)
class Endpoint:
    """Where the suite connects: ``server`` on its own Streamable HTTP (`direct`), or behind the
    gateway's HTTP front, over STDIO (`gateway`) or over Streamable HTTP (`upstream`)."""

    name: str
    server: str  # "target" (tests/upstreams/conformance_target.py) or "everything" (server-everything)
    route: str
    server_options: tuple[str, ...] = ()
    gateway_options: tuple[str, ...] = ()


DIRECT = Endpoint("target/direct", "target", "direct")
GATEWAY = Endpoint("target/gateway", "target", "gateway")
# The target's sampling and elicitation requests on the session's GET stream (issue 18).
UPSTREAM = Endpoint("target/upstream", "target", "upstream", ("--standalone",))
EVERYTHING_DIRECT = Endpoint("everything/direct", "everything", "direct")
EVERYTHING_GATEWAY = Endpoint("everything/gateway", "everything", "gateway")
# The era bridge (issue 22): the 2025-11-25 set before a 2026-07-28-only target, and the reverse.
TO_MODERN = Endpoint("target-modern/bridge", "target", "gateway", ("--era", "modern"), ("--bridge", "2026-07-28"))
TO_LEGACY = Endpoint("target-legacy/bridge", "target", "gateway", ("--era", "legacy"), ("--bridge", "2025-11-25"))
BRIDGED = {"2025-11-25": TO_MODERN, "2026-07-28": TO_LEGACY}


@dataclass(frozen=True)
class Run:
    suite: str  # the npm package, pinned
    revision: str | None  # the requirement set run (`--requirements`), or the suite's default scenarios
    endpoint: Endpoint

    @property
    def key(self) -> str:
        return self.endpoint.name if self.revision is None else f"{self.revision}/{self.endpoint.name}"


RUNS: tuple[Run, ...] = (
    *(Run(CONFORMANCE, None, e) for e in (DIRECT, GATEWAY, UPSTREAM, EVERYTHING_DIRECT, EVERYTHING_GATEWAY)),
    *(Run(CONFORMANCE_NEXT, revision, e) for revision in REVISIONS for e in (DIRECT, GATEWAY, UPSTREAM)),
    *(Run(CONFORMANCE_NEXT, revision, endpoint) for revision, endpoint in BRIDGED.items()),
)


def commands(server: str, port: int) -> tuple[list[str], list[str]]:
    """``server``'s STDIO command, and its Streamable HTTP one on ``port``."""
    if server == "target":
        return [*TARGET], [*TARGET, "--http", str(port)]
    everything = str(npm_bin(SERVER_EVERYTHING, "mcp-server-everything"))
    return [everything, "stdio"], [everything, "streamableHttp"]  # the port from $PORT


@contextmanager
def serving(endpoint: Endpoint, tmp_path: Path) -> Iterator[str]:
    """The URL the suite connects to for ``endpoint``, while it is served."""
    port = free_port()
    stdio, http = commands(endpoint.server, port)
    env = server_env(tmp_path, PORT=str(port))
    own_url = f"http://127.0.0.1:{port}/mcp"
    if endpoint.route == "gateway":
        command, url, gateway_env = gateway(tmp_path, [*stdio, *endpoint.server_options], *endpoint.gateway_options)
        with running(command, url, gateway_env):
            yield url
        return
    with running([*http, *endpoint.server_options], own_url, env):
        if endpoint.route == "direct":
            yield own_url
            return
        command, url, gateway_env = gateway(tmp_path, [], "--upstream", own_url, *endpoint.gateway_options)
        with running(command, url, gateway_env):
            yield url


def run_all(tmp_path: Path) -> dict[str, dict[str, SuiteRun]]:
    """suite → run key → what it found; each endpoint served once for all its runs."""
    suites = {suite: node_command(suite, "conformance") for suite in {run.suite for run in RUNS}}
    found: dict[str, dict[str, SuiteRun]] = {suite: {} for suite in suites}
    for endpoint in dict.fromkeys(run.endpoint for run in RUNS):
        with serving(endpoint, tmp_path) as url:
            for n, run in enumerate(r for r in RUNS if r.endpoint == endpoint):
                extra = () if run.revision is None else ("--requirements", run.revision)
                out = tmp_path / "out" / endpoint.name / str(n)
                found[run.suite][run.key] = run_suite(suites[run.suite], url, out, *extra)
    return found


def document(suite: str, runs: dict[str, SuiteRun]) -> dict[str, object]:
    """One suite version's results file: the packages, each run's results, and per requirement set
    the scenarios it runs without scoring (the same whatever the endpoint)."""
    not_scored: dict[str, dict[str, str]] = {}
    for run in RUNS:
        if run.suite == suite and run.revision is not None:
            found = not_scored.setdefault(run.revision, runs[run.key].not_scored)
            assert runs[run.key].not_scored == found, f"{run.key}: another not-scored set"
    everything = any(run.suite == suite and run.endpoint.server == "everything" for run in RUNS)
    return {
        "packages": [suite, SERVER_EVERYTHING] if everything else [suite],
        "runs": {key: run.results for key, run in sorted(runs.items())},
        "not_scored": not_scored,
    }


def passes(results: dict[str, str]) -> set[str]:
    return {scenario for scenario, result in results.items() if result == "pass"}


def test_the_conformance_suite_gives_the_same_results_through_the_gateway_as_direct(tmp_path: Path) -> None:
    """Issues 9, 18, 22: every scenario the target passes served directly passes through the gateway,
    before a STDIO upstream and before `--upstream URL`, and through the era bridge each scenario
    whose features both eras have; the target passes all that 2026-07-28 requires."""
    found = run_all(tmp_path)
    documents = {suite: document(suite, runs) for suite, runs in found.items()}
    if os.environ.get("MCP_UPDATE_CONFORMANCE") == "1":
        for suite, content in documents.items():
            results_file(suite).parent.mkdir(parents=True, exist_ok=True)
            results_file(suite).write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    release = {key: run.results for key, run in found[CONFORMANCE].items()}
    assert release["target/gateway"] == release["target/direct"]
    assert release["target/upstream"] == release["target/gateway"]
    assert set(release["target/gateway"].values()) == {"pass"}
    everything_direct, everything_gateway = passes(release["everything/direct"]), passes(release["everything/gateway"])
    assert everything_direct - EVERYTHING_UNLISTED <= everything_gateway
    assert everything_direct - everything_gateway >= EVERYTHING_UNLISTED
    next_line = {key: run.results for key, run in found[CONFORMANCE_NEXT].items()}
    for revision in REVISIONS:
        direct = passes(next_line[f"{revision}/{DIRECT.name}"])
        gaps = {scenario for known, scenario in GATEWAY_GAPS if known == revision}
        for route in (GATEWAY, UPSTREAM):
            through = passes(next_line[f"{revision}/{route.name}"])
            assert direct - gaps <= through, f"{revision}/{route.name}"
            assert gaps <= direct - through, f"{revision}/{route.name}: a known gap is closed, or no gap"
        bridged = passes(next_line[f"{revision}/{BRIDGED[revision].name}"])
        not_shared = {scenario for known, scenario in BRIDGE_GAPS if known == revision}
        assert direct - not_shared <= bridged, f"{revision} through the bridge"
        assert not_shared <= direct - bridged, f"{revision} through the bridge: a gap is closed, or no gap"
    required = found[CONFORMANCE_NEXT][f"2026-07-28/{DIRECT.name}"]
    assert {s: r for s, r in required.results.items() if s not in required.not_scored and r != "pass"} == {}
    for suite, content in documents.items():
        assert content == json.loads(results_file(suite).read_text()), results_file(suite).name
