"""The one JSON module: every parse and every serialisation in the project goes through here.

Backed by orjson, which is strict (no NaN/Infinity, valid UTF-8 only). No I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "JSONSyntaxError",
    "canonical",
    "dumps",
    "dumps_line",
    "dumps_pretty",
    "fingerprint",
    "loads",
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
