"""The one JSON module: every parse and every serialisation in the project goes through here.

Backed by orjson, which is strict (no NaN/Infinity, valid UTF-8 only). No I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["JSONSyntaxError", "canonical", "dumps", "dumps_line", "dumps_pretty", "fingerprint", "loads"]

JSONSyntaxError = orjson.JSONDecodeError
"""Raised by :func:`loads` for invalid JSON, invalid UTF-8, NaN or Infinity."""

_SORTED = orjson.OPT_SORT_KEYS


loads: Callable[[bytes | bytearray | memoryview | str], Any] = orjson.loads
"""Parse one JSON document (orjson's own function: no call in between on the per-frame path)."""


def dumps(value: Any) -> bytes:
    """Serialise compactly, keys in insertion order."""
    return orjson.dumps(value)


def dumps_line(value: Any) -> bytes:
    """Serialise compactly, keys in insertion order, with a trailing newline (one JSONL line)."""
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


def dumps_pretty(value: Any) -> bytes:
    """Serialise for people: two-space indent, sorted keys, trailing newline."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | _SORTED | orjson.OPT_APPEND_NEWLINE)


def canonical(value: Any) -> bytes:
    """Canonical JSON: sorted keys, no insignificant whitespace (the input of a fingerprint)."""
    return orjson.dumps(value, option=_SORTED)


def fingerprint(value: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``value``: equal content, equal fingerprint."""
    return hashlib.sha256(canonical(value)).hexdigest()
