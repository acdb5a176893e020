"""Configuration files (policy, tool catalogue, gateway): TOML or JSON, validated against a bundled schema."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..core.settings import SetupError
from .schemas import SchemaRegistry, violations

__all__ = ["read_config"]


def read_config(path: Path, *, what: str, schema: str, registry: SchemaRegistry) -> Any:
    """A TOML or JSON configuration file, validated against ``schemas/<schema>``; anything wrong is a
    ``SetupError`` naming the file and the line (syntax) or the JSON pointer (schema)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SetupError(f"{what} {path}: {exc.strerror}") from None
    try:
        # TOML refuses a key given twice itself, and so does the JSON reader (the later would win, unseen).
        document = tomllib.loads(raw.decode()) if path.suffix == ".toml" else jsonio.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{what} {path}: not valid TOML: {exc}") from None  # names line and column
    except jsonio.DuplicateKeyError as exc:
        raise SetupError(f"{what} {path}: {exc} (which one is meant?)") from None
    except jsonio.JSONSyntaxError as exc:
        raise SetupError(f"{what} {path}: not valid JSON: {exc}") from None  # names line and column
    except UnicodeDecodeError:
        raise SetupError(f"{what} {path}: not UTF-8") from None
    found = violations(registry.bundled(schema), document)
    if found:
        raise SetupError(f"{what} {path}: at {found[0]['path'] or '/'}: {found[0]['msg']}")
    return document
