"""The MCP Inspector's command line client (npm, TypeScript SDK) in front of the gateway, as a user runs
it (issue 29): the same exit status and answers as direct."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..conftest import server_env
from ..node_tools import SERVER_EVERYTHING, inspector_cli, node_command

WAIT = 90.0
EVERYTHING = [*node_command(SERVER_EVERYTHING, "mcp-server-everything"), "stdio"]


def inspect(tmp_path: Path, server: list[str], *request: str, first: tuple[str, ...] = ()) -> tuple[int, Any]:
    """The Inspector CLI's exit status and the JSON it printed for one ``request`` to ``server`` (a
    server's environment is the Inspector's few defaults and what ``-e`` gives: the code under test;
    ``first``: options given before the server's command)."""
    env = server_env(tmp_path, HOME=str(tmp_path))
    given = [f"{key}={env[key]}" for key in ("PYTHONPATH", "MCP_RUNS_DIR")]
    done = subprocess.run(
        [*inspector_cli(), *(arg for pair in given for arg in ("-e", pair)), *first, *server, *request],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=WAIT,
    )
    printed = done.stdout[: done.stdout.rfind("}") + 1]
    return done.returncode, json.loads(printed) if printed else done.stderr[-2000:]


def gateway(*command: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server", "gateway", *command]


def test_an_invalid_call_to_a_tool_with_an_output_schema_is_a_clean_tool_error_as_direct(tmp_path: Path) -> None:
    """Issue 29, row 3: the gateway's own answer to invalid arguments is a tool error valid for the
    tool's outputSchema (`structuredContent` left out): the Inspector exits as direct (5, a tool error),
    where it failed on a schema error."""
    call = ("--method", "tools/call", "--tool-name", "get-structured-content", "--tool-arg", "location=Nowhere")
    direct_status, direct = inspect(tmp_path, EVERYTHING, *call)
    gated_status, gated = inspect(tmp_path, gateway(*EVERYTHING), *call)
    assert direct_status == gated_status == 5, gated
    assert direct["isError"] is gated["isError"] is True
    assert "structuredContent" not in gated and [c["type"] for c in gated["content"]] == ["text"]


def test_the_upstream_command_works_without_the_double_dash(tmp_path: Path) -> None:
    """Issue 29, row 7: the Inspector swallows `--` (its own end of options), so the gateway gets the
    upstream command without it; it works so, and lists what the server lists direct."""
    direct_status, direct = inspect(tmp_path, EVERYTHING, "--method", "tools/list")
    without_status, without = inspect(tmp_path, gateway("--mode", "observe", *EVERYTHING), "--method", "tools/list")
    swallowed = ("--method", "tools/list")  # before the command: the `--` typed after is the Inspector's
    with_status, with_dashes = inspect(tmp_path, gateway("--", *EVERYTHING), first=swallowed)
    assert direct_status == without_status == with_status == 0, without
    assert without == with_dashes == direct
