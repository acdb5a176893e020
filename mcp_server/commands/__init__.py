"""The ``mcp-server`` commands, in one table: each row a command's name, its line in the list, the
example its help opens with, and the module (and its functions) that declare its arguments and run
it. A command's module is imported only when that command is declared or run: a command starts
without what the others need (``approvals`` the HTTP client, ``check`` and ``golden`` their
engines), and ``mcp-server --help`` lists them all without importing any."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

__all__ = ["COMMANDS", "Command"]

Declare = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace, list[str], Mapping[str, str]], int]


class Command(NamedTuple):
    """One command: ``run`` gets its parsed arguments, the upstream's command (what follows ``--``,
    when ``after_dashes``) and the environment, and returns the exit status. ``module`` names the
    module of ``commands`` that holds its functions ``declares`` and ``runs`` (and ``usage``'s text)."""

    name: str
    what: str
    example: str
    module: str
    declares: str = "declare"
    runs: str = "run"
    run_log: bool = False  # the options of a run that writes an event log
    after_dashes: bool = False  # an upstream's command after ``--``, kept out of the options
    usage_of: str | None = None

    def _of(self, name: str) -> Any:
        return getattr(importlib.import_module(f"{__name__}.{self.module}"), name)

    @property
    def declare(self) -> Declare:
        declare: Declare = self._of(self.declares)
        return declare

    @property
    def run(self) -> Run:
        run: Run = self._of(self.runs)
        return run

    @property
    def usage(self) -> str | None:
        return None if self.usage_of is None else str(self._of(self.usage_of))


COMMANDS: tuple[Command, ...] = (
    Command(
        "serve",
        "run the MCP server (STDIO by default)",
        "mcp-server serve --http 127.0.0.1:8000",
        "serve",
        run_log=True,
    ),
    Command(
        "validate",
        "validate one asset file",
        "mcp-server validate result.json --schema CallToolResult",
        "validate",
    ),
    Command(
        "gateway",
        "a validating proxy in front of an MCP server",
        "mcp-server gateway -- python my_server.py",
        "gateway",
        run_log=True,
        after_dashes=True,
        usage_of="USAGE",
    ),
    Command(
        "golden",
        "record or check golden event logs",
        "mcp-server golden check session.ndjson session.golden.jsonl",
        "golden",
        after_dashes=True,
    ),
    Command(
        "approvals",
        "list or answer tool calls held for approval",
        "mcp-server approvals list --url http://127.0.0.1:8000",
        "approvals",
    ),
    Command(
        "report",
        "a gateway conformance report again: its table or page",
        "mcp-server report runs/mcp_server/gateway/20250101T000000Z-4242-report.json",
        "report",
    ),
    Command(
        "check",
        "validate a recorded MCP session (NDJSON capture) offline",
        "mcp-server check session.ndjson --format json",
        "check",
    ),
    Command(
        "doctor",
        "check an MCP server in one go: every protocol version, its tools, every frame",
        "mcp-server doctor -- python my_server.py",
        "upstream",
        declares="declare_doctor",
        runs="doctor",
        after_dashes=True,
        usage_of="DOCTOR_USAGE",
    ),
    Command(
        "wrap",
        "put every server of an MCP client's configuration behind the gateway",
        "mcp-server wrap ~/.cursor/mcp.json",
        "wrap",
    ),
    Command(
        "lock",
        "record every tool an MCP server lists in a lockfile, for `gateway --lock`",
        "mcp-server lock --output mcp.lock.json -- python my_server.py",
        "upstream",
        declares="declare_lock",
        runs="lock",
        after_dashes=True,
        usage_of="LOCK_USAGE",
    ),
    Command(
        "login",
        "log the gateway in to an HTTP upstream that asks for OAuth, ahead of time",
        "mcp-server login --upstream https://example.com/mcp",
        "upstream",
        declares="declare_login",
        runs="login",
    ),
)
