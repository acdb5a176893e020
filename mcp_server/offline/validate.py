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

__all__ = ["main_validate"]


def _emit(result: Mapping[str, Any]) -> None:
    sys.stdout.write(jsonio.dumps(result).decode() + "\n")


def main_validate(argv: list[str], environ: Mapping[str, str]) -> int:
    parser = argparse.ArgumentParser(prog="mcp-server validate")
    parser.add_argument("file")
    parser.add_argument("--schema")
    args = parser.parse_args(argv)
    path = Path(args.file)
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
    schema = args.schema or corpus.schema_for_example(asset, path.name)
    result = validate_against(corpus, asset, schema)
    _emit({**result, "schema": schema})
    return 0 if result["ok"] else 1
