"""The errata list (ADR 41): where an official ``schema.json`` is narrower than the ``schema.ts`` it was
generated from, the TypeScript is the normative text and wins. Reads ``errata.json`` beside the MCP
schemas and gives a version's document corrected; never writes a file, never edits the document given.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsonio

__all__ = ["ERRATA_FILE", "Erratum", "corrected", "errata"]

ERRATA_FILE = "errata.json"
"""Beside the MCP schemas (``schemas/mcp/``): the corrections, each with its ``schema.ts`` line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Erratum:
    """One correction of one version's document."""

    name: str
    version: str
    definition: str
    pointer: str  # RFC 6901, into the version's schema document
    replaces: Any  # what the generated JSON holds there
    value: Any  # what schema.ts says
    file: str  # the schema.ts it comes from, relative to the MCP schemas (``2025-11-25/schema.ts``)
    line: int  # and its line there

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"


def errata(mcp_dir: Path, error: type[Exception] = ValueError) -> tuple[Erratum, ...]:
    """Every correction recorded in ``mcp_dir/errata.json``, one per erratum and version (none when
    the folder has no such file: a schema root of someone else's); ``error`` raised when it cannot
    be read (the registry's ``SchemaError``, passed in: this module sits below the registry's)."""
    found = _recorded(mcp_dir)
    if isinstance(found, str):
        raise error(found)
    return found


@functools.cache
def _recorded(mcp_dir: Path) -> tuple[Erratum, ...] | str:
    """The corrections of ``mcp_dir``, read once, or why they cannot be read."""
    path = mcp_dir / ERRATA_FILE
    if not path.is_file():
        return ()
    try:
        entries = jsonio.loads(path.read_bytes())["errata"]
        return tuple(
            Erratum(
                name=entry["name"],
                version=version,
                definition=entry["definition"],
                pointer=place["pointer"],
                replaces=place["replaces"],
                value=place["with"],
                file=place["source"]["file"],
                line=int(place["source"]["line"]),
            )
            for entry in entries
            for version, place in entry["versions"].items()
        )
    except (OSError, jsonio.JSONSyntaxError, KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"{path}: not an errata list ({type(exc).__name__}: {exc})"


def corrected(document: Any, version: str, mcp_dir: Path, error: type[Exception] = ValueError) -> Any:
    """``document`` (``version``'s schema) with that version's errata applied: a copy along each
    corrected path, the rest shared. A place that does not hold what its erratum replaces raises
    ``error``: a correction is never applied to a value nobody has checked (the file was copied
    again: the erratum must be checked again)."""
    for erratum in errata(mcp_dir, error):
        if erratum.version == version:
            document = _replaced(document, _tokens(erratum, error), erratum, error)
    return document


def _tokens(erratum: Erratum, error: type[Exception]) -> list[str]:
    if not erratum.pointer.startswith("/"):
        raise error(f"erratum {erratum.name} ({erratum.source}): {erratum.pointer!r} is not an RFC 6901 pointer")
    return [token.replace("~1", "/").replace("~0", "~") for token in erratum.pointer[1:].split("/")]


def _replaced(node: Any, tokens: list[str], erratum: Erratum, error: type[Exception]) -> Any:
    if not tokens:
        if node != erratum.replaces:
            raise error(
                f"erratum {erratum.name} ({erratum.source}): {erratum.version} holds {node!r} at {erratum.pointer},"
                f" not the {erratum.replaces!r} it corrects; check the erratum against the schema copied"
            )
        return jsonio.loads(jsonio.dumps(erratum.value))  # each document its own copy of the value
    head, rest = tokens[0], tokens[1:]
    if isinstance(node, Mapping) and head in node:
        return {**node, head: _replaced(node[head], rest, erratum, error)}
    if isinstance(node, list) and head.isdigit() and int(head) < len(node):
        index = int(head)
        return [*node[:index], _replaced(node[index], rest, erratum, error), *node[index + 1 :]]
    raise error(f"erratum {erratum.name} ({erratum.source}): {erratum.version} has no {erratum.pointer}")
