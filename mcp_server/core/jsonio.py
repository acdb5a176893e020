"""The one JSON module: every parse and every serialisation in the project goes through here.

Backed by orjson, which is strict (no NaN/Infinity, valid UTF-8 only). No I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "DuplicateKeyError",
    "JSONSyntaxError",
    "canonical",
    "dumps",
    "dumps_line",
    "dumps_pretty",
    "fingerprint",
    "loads",
    "loads_unique",
    "too_deep",
]

JSONSyntaxError = orjson.JSONDecodeError
"""Raised by :func:`loads` for invalid JSON, invalid UTF-8, NaN or Infinity."""

_SORTED = orjson.OPT_SORT_KEYS

MAX_DEPTH = 254
"""The deepest nesting of arrays and objects the project writes back or lists violations of: orjson
serialises no deeper, and jsonschema-rs renders a violation of no deeper value. The parser reads
documents up to 1,024 levels; a deeper value is answered with a catalogued ``too_deep``, never a crash."""


loads: Callable[[bytes | bytearray | memoryview | str], Any] = orjson.loads
"""Parse one JSON document (orjson's own function: no call in between on the per-frame path)."""


class DuplicateKeyError(ValueError):
    """An object of a document names one key twice (``key``): the later value would win unseen."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} appears twice in one object")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKeyError(key)
        found[key] = value
    return found


def _no_constant(name: str) -> Any:
    raise JSONSyntaxError(f"{name} is not JSON", name, 0)


def loads_unique(raw: bytes) -> Any:
    """A document a person wrote (a configuration, a lockfile): parsed as ``loads`` does (its errors
    name line and column), and refused with ``DuplicateKeyError`` when an object repeats a key, which
    ``loads`` lets the later win in silence. Not for the per-frame path: it parses twice."""
    document = loads(raw)
    if isinstance(document, (dict, list)):  # only containers can repeat a key
        json.loads(raw, object_pairs_hook=_unique, parse_constant=_no_constant)
    return document


def dumps(value: Any) -> bytes:
    """Serialise compactly, keys in insertion order."""
    return orjson.dumps(value)


def dumps_line(value: Any) -> bytes:
    """Serialise compactly, keys in insertion order, with a trailing newline (one JSONL line)."""
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


def dumps_pretty(value: Any, *, sort_keys: bool = True) -> bytes:
    """Serialise for people: two-space indent, sorted keys (or, for a file a person keeps in their
    own order, insertion order), trailing newline."""
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    return orjson.dumps(value, option=option | _SORTED if sort_keys else option)


def canonical(value: Any) -> bytes:
    """Canonical JSON: sorted keys, no insignificant whitespace (the input of a fingerprint)."""
    return orjson.dumps(value, option=_SORTED)


def fingerprint(value: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``value``: equal content, equal fingerprint."""
    return hashlib.sha256(canonical(value)).hexdigest()


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels deep. Iterative: any depth."""
    level: list[Any] = [value]
    for _ in range(limit):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not any(isinstance(node, (dict, list)) for node in level):
            return False
    return True
