"""`mcp-server doctor` against real upstreams: every version, the tools, every frame, a verdict (issue 23)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import ROOT, cli, server_env
from ..node_tools import SERVER_EVERYTHING, npm_bin
from ..processes import free_port, running

WAIT = 120.0
SDK_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "sdk_server.py")]
BROKEN_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "broken_server.py")]
VERSIONLESS_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "versionless_server.py")]


def doctor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(tmp_path, "doctor", *args, wait=WAIT)


def verdict(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in result.stdout + result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_a_conforming_sdk_server_is_ok_at_every_bundled_version(tmp_path: Path, sdk_forks: list[str]) -> None:
    """Issue 23: the handshake at every version the upstream accepts (2026-07-28 by `server/discover`),
    its tools, no violation: exit 0 and the command that puts it behind the gateway. (The SDK server
    imported once and forked for each of the handshakes.)"""
    result = doctor(tmp_path, "--format", "json", "--", *sdk_forks)
    assert result.returncode == 0, result.stdout + result.stderr
    found = verdict(result)
    versions = SchemaRegistry().versions
    assert [entry["version"] for entry in found["versions"]] == list(reversed(versions))
    assert found["accepted"] == list(reversed(versions))
    assert all(sorted(entry["tools"]) == ["add", "echo", "fail"] for entry in found["versions"])
    assert found["violations"] == {}
    text = doctor(tmp_path, "--", *sdk_forks)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[-1].endswith("mcp-server gateway -- " + " ".join(sdk_forks))


def test_a_broken_server_is_told_its_problems_and_exits_1(tmp_path: Path) -> None:
    """Issue 23: every page of `tools/list` is read and each tool's schemas validated; a tool whose
    inputSchema is no JSON Schema is a violation, and the verdict is problems (exit 1)."""
    result = doctor(tmp_path, "--format", "json", "--", *BROKEN_SERVER, "--pages")
    assert result.returncode == 1, result.stdout + result.stderr
    found = verdict(result)
    assert found["ok"] is False
    assert "2025-11-25" in found["accepted"]
    assert "2026-07-28" not in found["accepted"]  # it knows no server/discover
    assert len(found["versions"][1]["tools"]) == 10  # three pages and a last one
    assert found["violations_by_tool"]["invalid_tool_schema"] == {"badschema": len(found["accepted"])}
    text = doctor(tmp_path, "--", *BROKEN_SERVER, "--pages")
    assert text.returncode == 1
    assert "invalid_tool_schema" in text.stdout


def test_a_server_whose_initialize_reply_breaks_one_rule_is_told_that_rule_at_the_version_it_answered(
    tmp_path: Path,
) -> None:
    """ADR 42: the server's one fault (`serverInfo` without `version`) is reported once per
    handshake, against the server, and its session at the version it answered (2025-11-25) is
    checked at that version: one violation there, as the gateway and `check` give (its `tools/list`
    and its reply were judged at 2026-07-28, the doctor blamed)."""
    result = doctor(tmp_path, "--format", "json", "--", *VERSIONLESS_SERVER)
    assert result.returncode == 1, result.stdout + result.stderr
    found = verdict(result)
    assert found["accepted"] == ["2025-11-25"]
    by_version = {entry["version"]: entry for entry in found["versions"]}
    assert by_version["2025-11-25"]["tools"] == ["echo"]
    assert by_version["2025-11-25"]["violations"] == {"invalid_params": 1}
    handshakes = [entry for entry in found["versions"] if entry["answered"] is not None]
    assert all(entry["answered"] == "2025-11-25" for entry in handshakes)  # its counter-offer to the others
    assert all(entry["violations"] == {"invalid_params": 1} for entry in handshakes)
    assert found["violations"] == {"invalid_params": len(handshakes)}
    examples = found["examples"]["invalid_params"]
    assert {(e["party"], e["method"], e["errors"][0]["path"]) for e in examples} == {
        ("upstream", "initialize", "/result/serverInfo")
    }
    text = doctor(tmp_path, "--", *VERSIONLESS_SERVER)
    assert text.returncode == 1
    assert f"  invalid_params x{len(handshakes)} (upstream, initialize): /result/serverInfo" in text.stdout


def test_a_streamable_http_upstream_is_examined_over_http(tmp_path: Path) -> None:
    """Issue 23: `--upstream URL` examines a Streamable HTTP server the same way."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*SDK_SERVER, "http", str(port)], url, server_env(tmp_path)):
        result = doctor(tmp_path, "--format", "json", "--upstream", url)
    assert result.returncode == 0, result.stdout + result.stderr
    found = verdict(result)
    assert "2025-11-25" in found["accepted"]
    assert found["violations"] == {}


def test_an_upstream_that_exits_at_once_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """Issue 23 / ADR 12: an upstream gone before it answers is `upstream_unavailable`, exit 1."""
    result = doctor(tmp_path, "--format", "json", "--", sys.executable, "-c", "pass")
    assert result.returncode == 1, result.stdout + result.stderr
    found = verdict(result)
    assert found["accepted"] == []
    assert "upstream_unavailable" in found["violations"]


@pytest.mark.parametrize(
    "upstream",
    [["--", "no-such-mcp-server-command"], ["--upstream", "http://127.0.0.1:{port}/mcp"], []],
    ids=["command-not-found", "url-refused", "nothing"],
)
def test_unusable_input_exits_2_with_a_clear_error(tmp_path: Path, upstream: list[str]) -> None:
    """Issue 23: a command that does not exist or a URL nobody listens on is unusable input: exit 2,
    `mcp:error reason=setup_failed`, no traceback."""
    args = [arg.format(port=free_port()) for arg in upstream]
    result = doctor(tmp_path, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("mcp:error reason=setup_failed detail=")
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""


@pytest.mark.slow
def test_the_reference_server_everything_is_ok(tmp_path: Path) -> None:
    """Issue 23: the reference server from npm passes the doctor at the versions it accepts."""
    everything = npm_bin(SERVER_EVERYTHING, "mcp-server-everything")
    result = doctor(tmp_path, "--format", "json", "--", str(everything), "stdio")
    assert result.returncode == 0, result.stdout + result.stderr
    found = verdict(result)
    assert "2025-11-25" in found["accepted"]
    assert all("echo" in entry["tools"] for entry in found["versions"] if entry["accepted"])
