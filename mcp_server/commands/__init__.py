"""The ``mcp-server`` commands, in one table: each row a command's name, its line in the list, the
example its help opens with, how its arguments are declared and how it runs. A command's module
imports what it runs only when it runs (``mcp-server --help`` stays quick)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import NamedTuple

from . import approvals, check, gateway, golden, report, serve, upstream, validate, wrap

__all__ = ["COMMANDS", "Command"]

Declare = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace, list[str], Mapping[str, str]], int]


class Command(NamedTuple):
    """One command: ``run`` gets its parsed arguments, the upstream's command (what follows ``--``,
    when ``after_dashes``) and the environment, and returns the exit status."""

    name: str
    what: str
    example: str
    declare: Declare
    run: Run
    run_log: bool = False  # the options of a run that writes an event log
    after_dashes: bool = False  # an upstream's command after ``--``, kept out of the options
    usage: str | None = None


COMMANDS: tuple[Command, ...] = (
    Command(
        "serve",
        "run the MCP server (STDIO by default)",
        "mcp-server serve --http 127.0.0.1:8000",
        serve.declare,
        serve.run,
        run_log=True,
    ),
    Command(
        "validate",
        "validate one asset file",
        "mcp-server validate result.json --schema CallToolResult",
        validate.declare,
        validate.run,
    ),
    Command(
        "gateway",
        "a validating proxy in front of an MCP server",
        "mcp-server gateway -- python my_server.py",
        gateway.declare,
        gateway.run,
        run_log=True,
        after_dashes=True,
        usage=gateway.USAGE,
    ),
    Command(
        "golden",
        "record or check golden event logs",
        "mcp-server golden check session.ndjson session.golden.jsonl",
        golden.declare,
        golden.run,
        after_dashes=True,
    ),
    Command(
        "approvals",
        "list or answer tool calls held for approval",
        "mcp-server approvals list --url http://127.0.0.1:8000",
        approvals.declare,
        approvals.run,
    ),
    Command(
        "report",
        "a gateway conformance report again: its table or page",
        "mcp-server report runs/mcp_server/gateway/20250101T000000Z-4242-report.json",
        report.declare,
        report.run,
    ),
    Command(
        "check",
        "validate a recorded MCP session (NDJSON capture) offline",
        "mcp-server check session.ndjson --format json",
        check.declare,
        check.run,
    ),
    Command(
        "doctor",
        "check an MCP server in one go: every protocol version, its tools, every frame",
        "mcp-server doctor -- python my_server.py",
        upstream.declare_doctor,
        upstream.doctor,
        after_dashes=True,
        usage=upstream.DOCTOR_USAGE,
    ),
    Command(
        "wrap",
        "put every server of an MCP client's configuration behind the gateway",
        "mcp-server wrap ~/.cursor/mcp.json",
        wrap.declare,
        wrap.run,
    ),
    Command(
        "lock",
        "record every tool an MCP server lists in a lockfile, for `gateway --lock`",
        "mcp-server lock --output mcp.lock.json -- python my_server.py",
        upstream.declare_lock,
        upstream.lock,
        after_dashes=True,
        usage=upstream.LOCK_USAGE,
    ),
    Command(
        "login",
        "log the gateway in to an HTTP upstream that asks for OAuth, ahead of time",
        "mcp-server login --upstream https://example.com/mcp",
        upstream.declare_login,
        upstream.login,
    ),
)
