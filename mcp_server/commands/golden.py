"""``mcp-server golden record|check SCRIPT ... [-- UPSTREAM COMMAND]``: a script replayed against a real
server or gateway (``harness/``), its events written to a golden file or compared with one. Exit 0
equal (or recorded), 1 different, 2 error."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from ..core import jsonio
from ..harness.golden import TRANSPORTS, check_events, run_script_file, write_golden
from ..harness.replay import ReplayError
from ..observe.events import read_events

__all__ = ["declare", "run"]


def declare(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    record = verbs.add_parser("record", help="replay SCRIPT and write its events to GOLDEN")
    record.add_argument("script", type=Path)
    record.add_argument("-o", "--output", type=Path, required=True, metavar="GOLDEN")
    check = verbs.add_parser("check", help="replay SCRIPT and compare its events with GOLDEN")
    check.add_argument("script", type=Path)
    check.add_argument("golden", type=Path)
    check.add_argument("--update", action="store_true", help="rewrite GOLDEN with what ran")
    for verb in (record, check):
        verb.add_argument("--transport", choices=TRANSPORTS, default="stdio")
        verb.add_argument("--live", action="store_true", help="not deterministic: compare without volatile fields")


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    """Replay the script (against ``command``, the upstream after ``--``, if any) and record or compare."""
    upstream = command or None
    try:
        actual = run_script_file(args.script, transport=args.transport, upstream=upstream, deterministic=not args.live)
        if args.verb == "record":
            write_golden(args.output, actual)
            sys.stderr.write(f"mcp:golden recorded events={len(actual)} path={args.output}\n")
            return 0
        try:
            golden = list(read_events(args.golden))
        except FileNotFoundError:
            raise ReplayError(f"no golden file at {args.golden} (record one with `golden record`)") from None
        except jsonio.JSONSyntaxError:
            raise ReplayError(f"{args.golden} is not a JSONL golden file") from None
    except ReplayError as exc:
        sys.stderr.write(f"mcp:error reason=golden_failed detail={exc}\n")
        return 2
    differences = check_events(golden, actual)
    if args.update and differences:
        write_golden(args.golden, actual)
        sys.stderr.write(f"mcp:golden updated differences={len(differences)} path={args.golden}\n")
        return 0
    for difference in differences:
        sys.stdout.write(difference.line() + "\n")
    sys.stderr.write(
        f"mcp:golden {'differs' if differences else 'matches'} events={len(actual)} "
        f"differences={len(differences)} golden={args.golden}\n"
    )
    return 1 if differences else 0
