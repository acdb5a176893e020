"""`mcp-server validate FILE [--schema NAME]` and `python -m mcp_server --validate FILE`.

Prints one JSON line: the ``validate_asset`` result plus ``"schema"``. Exit 0 valid, 1 invalid,
2 when the file cannot be read or parsed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..registry.corpus import load_corpus, validate_against
from ..registry.schemas import SchemaRegistry

__all__ = ["declare", "run", "validate_file"]


def _emit(result: Mapping[str, Any]) -> None:
    sys.stdout.write(jsonio.dumps(result).decode() + "\n")


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file")
    parser.add_argument("--schema", metavar="NAME")


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    return validate_file(Path(args.file), args.schema, environ)


def validate_file(path: Path, schema_name: str | None, environ: Mapping[str, str]) -> int:
    """``path`` against ``schema_name`` (else the schema its name or content says): exit 0, 1 or 2."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        _emit({"ok": False, "reason": "io_error", "errors": [{"path": "", "msg": f"{path}: {exc.strerror}"}]})
        return 2
    try:
        asset = jsonio.loads(raw)
    except jsonio.JSONSyntaxError as exc:
        _emit({"ok": False, "reason": "parse_error", "errors": [{"path": "", "msg": f"{path}: {exc}"}]})
        return 2
    corpus = load_corpus(environ, SchemaRegistry())
    schema = schema_name or corpus.schema_for_example(asset, path.name)
    result = validate_against(corpus, asset, schema)
    _emit({**result, "schema": schema})
    return 0 if result["ok"] else 1
