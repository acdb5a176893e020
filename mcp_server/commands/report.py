"""``mcp-server report FILE [--html OUT]``: a conformance report the gateway wrote, its table printed
again (exit 0 clean, 1 violations) or its page written (exit 0); 2 when it cannot be read or written."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..execution.redaction import Redactor
from ..observe.html import render_html
from ..observe.report import ReportError, render_table, run_digest, write_page

__all__ = ["declare", "run"]


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a conformance report the gateway wrote (runs/mcp_server/gateway/*-report.json)")
    parser.add_argument("--html", type=Path, metavar="OUT", help="write the report as one self-contained HTML page")


def _load(path: Path) -> dict[str, Any]:
    """A written report, or ``ReportError`` saying why it is not one."""
    try:
        document = jsonio.loads(path.read_bytes())
    except OSError as exc:
        raise ReportError("io_error", f"{path}: {exc.strerror}") from None
    except jsonio.JSONSyntaxError:
        raise ReportError("parse_error", f"{path} is not a JSON report") from None
    if not isinstance(document, dict) or not isinstance(document.get("violations"), dict):
        raise ReportError("parse_error", f"{path} is not a conformance report")
    return document


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    """``mcp-server report FILE [--html OUT]`` (arguments from ``declare``): print a
    written report's table again (exit 0 clean, 1 violations), or write its page (exit 0 once it is
    written, whatever the run found); 2 when the report cannot be read or the page written."""
    try:
        document = _load(Path(args.file))
        if args.html is not None:
            page = render_html(document, run_digest(Path(args.file), document), redactor=Redactor.build())
            write_page(args.html, page)
    except ReportError as exc:
        sys.stderr.write(f"mcp:error reason={exc.reason} detail={exc.detail}\n")
        return 2
    if args.html is None:
        sys.stdout.write(render_table(document))
    else:
        sys.stderr.write(f"mcp:report html={args.html}\n")
        return 0
    return 1 if document["violations"] else 0
