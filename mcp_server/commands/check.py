"""``mcp-server check CAPTURE``: its arguments, and the run: the capture checked (``offline/check.py``),
the report rendered in the format asked for. Exit 0 clean, 1 violations, 2 unreadable input."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ..core.settings import ASSERT_FORMATS_HELP, DEFAULT_MAX_FRAME_BYTES, Settings, SetupError
from ..execution.redaction import Redactor
from ..offline.check import RENDERERS, CaptureError, check_capture, render_page
from ..offline.library import default_registry
from ..registry.lockfile import LockCheck, Lockfile
from ..registry.schemas import SchemaRegistry

__all__ = ["declare", "run"]

_FORMATS = sorted([*RENDERERS, "html"])


def _code_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition(":")
    try:
        return (int(low), int(high)) if sep else (int(low), int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected CODE or LOW:HIGH (integers)") from None


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="NDJSON frames, {direction, frame} lines, or a run log")
    parser.add_argument("--format", choices=_FORMATS, default="text", help="report format (text)")
    parser.add_argument(
        "--version", dest="protocol_version", metavar="V", help="check against V instead of the negotiated version"
    )
    parser.add_argument("--assert-formats", action="store_true", help=ASSERT_FORMATS_HELP)
    parser.add_argument(
        "--allow-error-codes",
        dest="allow_codes",
        metavar="LOW:HIGH",
        type=_code_range,
        action="append",
        default=[],
        help="error codes accepted besides JSON-RPC's, the server range and the spec's (repeatable)",
    )
    parser.add_argument(
        "--max-frame-bytes",
        type=int,
        metavar="N",
        help=f"a longer line is a finding, never read whole (MCP_MAX_FRAME_BYTES; default {DEFAULT_MAX_FRAME_BYTES})",
    )
    parser.add_argument("--lock", type=Path, metavar="FILE", help="hold the listed tools to this tool lockfile")
    parser.add_argument("--lock-server", metavar="NAME", help="the lockfile's server key (default: the only one)")


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    """Exit 0 clean, 1 violations, 2 when the capture cannot be read (``mcp:error`` on stderr)."""
    try:
        registry = SchemaRegistry(assert_formats=True) if args.assert_formats else None
        registry = registry or default_registry()
        lock = None if args.lock is None else _lock_check(args.lock, args.lock_server, registry)
        capture, version, codes = Path(args.capture), args.protocol_version, args.allow_codes
        limit = _frame_limit(args.max_frame_bytes)
        report = check_capture(
            capture, registry=registry, version=version, allow_codes=codes, lock=lock, max_frame_bytes=limit
        )
    except CaptureError as exc:
        detail = " ".join(exc.detail.split())
        sys.stderr.write(f"mcp:error reason={exc.reason} detail={detail}\n")
        return 2
    # Examples quote what the capture holds: every format shows them as the gateway's report would, redacted.
    document = Redactor.build().redact_record(report.to_document())[0]
    render = RENDERERS.get(args.format)
    sys.stdout.write(render_page(document, Path(args.capture)) if render is None else render(document))
    sys.stdout.flush()
    return 1 if report.violations else 0


def _frame_limit(given: int | None) -> int:
    """``--max-frame-bytes``, else ``MCP_MAX_FRAME_BYTES``, else the default: the live chain's limit."""
    if given is not None:
        return given
    try:
        return Settings.from_env({"MCP_MAX_FRAME_BYTES": os.environ.get("MCP_MAX_FRAME_BYTES", "")}).max_frame_bytes
    except SetupError as exc:
        raise CaptureError("bad_limit", str(exc)) from None


def _lock_check(path: Path, server: str | None, registry: SchemaRegistry) -> LockCheck:
    """The lockfile the capture's tools are held to; one that is not a sound lockfile is unusable input."""
    try:
        lock = Lockfile.load(path, registry)
    except SetupError as exc:
        raise CaptureError("bad_lockfile", str(exc)) from None
    if server is not None and server not in lock.servers:
        raise CaptureError("bad_lockfile", f"lockfile {path}: no server {server!r}")
    return LockCheck(lock, server)
