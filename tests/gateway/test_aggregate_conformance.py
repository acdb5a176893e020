"""The official conformance suite through an aggregate of one server (issue 33): the same results as
through the single-server gateway (`fixtures/conformance/`, which `test_gateway_conformance.py`
keeps equal to a live run). One suite version, the release line, to keep the run short.

The one server is unprefixed (`prefix = ""`): the suite calls the target's tools by their own names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import server_env
from ..node_tools import CONFORMANCE, node_command
from ..processes import UPSTREAMS, forked_server, free_port, running
from .aggregate_servers import gateway_command, server, write_config
from .conformance import results_file, run_suite

pytestmark = pytest.mark.conformance


def test_the_conformance_suite_gives_the_same_results_through_an_aggregate_of_one(tmp_path: Path) -> None:
    """Issue 33, "done when": the suite through an aggregate of one member gives the same results as
    through the single-server gateway (the target imported once and forked per session, as there)."""
    with forked_server(UPSTREAMS / "conformance_target.py") as target:
        config = write_config(tmp_path, {"target": server(target, prefix="")})
        url = f"http://127.0.0.1:{free_port()}/mcp"
        command = gateway_command("--listen", url, "--idle-timeout", "5", "--config", str(config))
        with running(command, url, server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))):
            found = run_suite(node_command(CONFORMANCE, "conformance"), url, tmp_path / "out")
    expected = json.loads(results_file(CONFORMANCE).read_text())["runs"]["target/gateway"]
    assert found.results == expected
