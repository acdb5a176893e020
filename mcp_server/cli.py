"""The ``mcp-server`` command line: the parser made from the table of commands (``commands/``), then
the command run. Diagnostics go to stderr; stdout is the protocol's, or a result's.

Set-up failures print ``mcp:error reason=setup_failed detail=...`` and exit 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .commands import COMMANDS, Command
from .commands.common import declare_run_log, say
from .core.settings import SetupError, log_level
from .registry.schemas import SchemaError

__all__ = ["main"]

EXAMPLE = "mcp-server doctor -- python my_server.py"
"""What ``mcp-server --help`` opens with (each command's help opens with its own, from the table)."""


class _VersionAction(argparse.Action):
    """``--version``: the program's version, then each MCP schema in use with its source commit and
    SHA-256 (the official schemas are rewritten after release: this names the bytes), then each
    erratum applied to them, with its ``schema.ts`` line (the verdicts come from both; ADR 41)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from .registry.errata import errata
        from .registry.schemas import BUNDLED_SCHEMAS, schema_provenance

        lines = [f"mcp-server {__version__}"]
        for entry in schema_provenance():
            source = f"{entry['repository']}@{entry['commit']}" if entry["commit"] else "unrecorded source"
            lines.append(f"schema {entry['version']} {source} sha256={entry['sha256']}")
        lines += [
            f"erratum {e.version} {e.name} schema.ts:{e.line}" for e in errata(BUNDLED_SCHEMAS / "mcp", SchemaError)
        ]
        sys.stdout.write("\n".join(lines) + "\n")
        parser.exit()


def _described(command: Command, declared: bool) -> dict[str, Any]:
    """A command's line in the list and (``declared``) its own help, which opens with its example."""
    described: dict[str, Any] = {
        "help": command.what,
        "description": f"example: {command.example}\n\n{command.what}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    usage = command.usage if declared else None
    if usage is not None:
        described["usage"] = usage
    return described


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, the arguments of that command alone are declared (the others'
    modules are not imported: each is listed by its row of the table)."""
    parser = argparse.ArgumentParser(
        prog="mcp-server",
        description=f"example: {EXAMPLE}\n\nMCP conformance gateway and schema-validation server",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0, help="the version, and each bundled schema's source"
    )
    parser.add_argument("--validate", metavar="FILE", help="validate one asset file and exit (as `validate FILE`)")
    subparsers = parser.add_subparsers(dest="command")
    run_log = argparse.ArgumentParser(add_help=False)
    declare_run_log(run_log)
    for command in COMMANDS:
        declared = only is None or command.name == only
        parents = [run_log] if command.run_log and declared else []
        subparser = subparsers.add_parser(command.name, parents=parents, **_described(command, declared))
        if declared:
            command.declare(subparser)
    return parser


def _setup_logging(environ: Mapping[str, str]) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mcp:%(levelname)s %(message)s"))
    root = logging.getLogger("mcp_server")
    root.addHandler(handler)
    root.setLevel(logging.WARNING if log_level(environ) == "warning" else logging.INFO)
    root.propagate = False
    # Execution records are the execution gate's audit trail: written whatever MCP_LOG_LEVEL says.
    logging.getLogger("mcp_server.execution.gate").setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    by_name = {command.name: command for command in COMMANDS}
    upstream: list[str] = []
    named = by_name.get(argv[0]) if argv else None
    if named is not None and named.after_dashes and "--" in argv:
        split = argv.index("--")
        argv, upstream = argv[:split], argv[split + 1 :]
    args = _parser(named.name if named is not None else "").parse_args(argv)
    if args.command is None and not args.validate:  # the server on STDIO is the default
        args = _parser("serve").parse_args(["serve", *argv])
    upstream = upstream or list(getattr(args, "upstream_command", None) or [])
    try:
        _setup_logging(environ)
        if args.validate:
            from .commands.validate import validate_file

            return validate_file(Path(args.validate), None, environ)
        return by_name[args.command].run(args, upstream, environ)
    except (SetupError, SchemaError) as exc:
        say(f"mcp:error reason=setup_failed detail={exc}")
        return 2
    except KeyboardInterrupt:
        return 0
