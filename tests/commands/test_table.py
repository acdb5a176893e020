"""The table of commands: every command the parser knows comes from it, and no command is the server."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from mcp_server import cli
from mcp_server.commands import COMMANDS

from ..conftest import server_env


def test_every_command_of_the_parser_is_a_row_of_the_one_table() -> None:
    """Issue 32: one table of commands in one place; the parser is made from it, nothing beside it."""
    names = [command.name for command in COMMANDS]
    [subparsers] = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert sorted(names) == sorted(subparsers.choices)
    assert len(set(names)) == len(names)


def test_no_command_runs_the_server_on_stdio(tmp_path: Path) -> None:
    """Design card (modes): `serve` on STDIO is the default; `mcp-server` alone answers a ping
    (it stopped with a traceback, the server's arguments missing)."""
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n"
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server"],
        input=ping,
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert "Traceback" not in result.stderr
