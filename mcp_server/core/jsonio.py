"""The one JSON module: every parse and every serialisation in the project goes through here.

One reading of a document, whoever wrote it (ADR 40): jiter parses, strictly (RFC 8259: no NaN or
Infinity, valid UTF-8 only) and as I-JSON (RFC 7493) asks of what a peer sends: an object that names
a member twice is refused (a first-wins and a last-wins parser would read two documents), integers
are exact at any size, and nesting stops at ``MAX_READ_DEPTH``. orjson serialises. No I/O.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any

import jiter
import orjson

__all__ = [
    "MAX_DEPTH",
    "MAX_READ_DEPTH",
    "DuplicateKeyError",
    "JSONSyntaxError",
    "TooDeepError",
    "canonical",
    "dumps",
    "dumps_line",
    "dumps_pretty",
    "duplicate_pointer",
    "fingerprint",
    "finite",
    "loads",
    "loads_exact",
    "read",
    "read_last_wins",
    "says_more_than_doubles",
    "too_deep",
]

_SORTED = orjson.OPT_SORT_KEYS

MAX_DEPTH = 254
"""The deepest nesting of arrays and objects the project writes back or lists violations of: orjson
serialises no deeper, and jsonschema-rs renders a violation of no deeper value."""

MAX_READ_DEPTH = 201
"""How deep a document read here may nest: the document is the first level, and every value inside
an array or object (a scalar, an empty one) one level deeper than it (the parser's own bound: 200
levels of arrays and objects that hold a value). Below ``MAX_DEPTH``, so that anything read can be
written back inside an envelope. Deeper is ``TooDeepError``, never a crash."""


class JSONSyntaxError(ValueError):
    """A document :func:`loads` refuses; the message names the line and column (and what was wrong)."""


class DuplicateKeyError(JSONSyntaxError):
    """An object of the document names one member twice (``key``): the later value would win unseen,
    where another parser keeps the first. ``offset``: the bytes of the document up to the second
    name's colon (``duplicate_pointer`` reads where that object is from them)."""

    def __init__(self, message: str, key: str, offset: int) -> None:
        super().__init__(message)
        self.key = key
        self.offset = offset


class TooDeepError(JSONSyntaxError):
    """The document nests arrays and objects more than ``MAX_READ_DEPTH`` levels deep."""


read: Callable[[bytes], Any] = functools.partial(jiter.from_json, allow_inf_nan=False, catch_duplicate_keys=True)
"""Parse one JSON document from ``bytes`` as :func:`loads` does, raising jiter's bare ``ValueError``
on any refusal: the per-frame path calls it with nothing in between and reads the refusal again
with :func:`loads` (which names it) only for the frames it refuses."""

read_last_wins: Callable[[bytes], Any] = functools.partial(jiter.from_json, allow_inf_nan=False)
"""A document that names a member twice, read as most parsers read it (the later value wins): for what
observe mode relays and a report names, never for a verdict (``read`` refuses such a document)."""

_read_exact = functools.partial(
    jiter.from_json, allow_inf_nan=False, catch_duplicate_keys=True, float_mode="decimal", cache_mode="none"
)
_POSITION = re.compile(r" at line (\d+) column (\d+)$")
_DUPLICATE = re.compile(r'^Detected duplicate key "(.*)" at line \d+ column \d+$', re.DOTALL)


def loads(raw: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON document: ``JSONSyntaxError`` for anything RFC 8259 refuses, its subclasses
    ``DuplicateKeyError`` for a member named twice and ``TooDeepError`` past ``MAX_READ_DEPTH``."""
    data = raw if type(raw) is bytes else (raw.encode() if isinstance(raw, str) else bytes(raw))
    try:
        return read(data)
    except ValueError as exc:
        raise _refusal(str(exc), data) from None


_LONG_NUMBER = rb"[0-9](?:\.?[0-9]){15}|[eE][-+]?[0-9]{3}"
"""Where a number token may say more than its double does: 16 significant digits or more, or an
exponent of three digits (past a double's range, or below its precision). Text that matches inside
a string is only a false alarm (the exact reading then finds nothing more)."""


@functools.cache
def _long_number() -> Any:
    import re2  # (on first use: a server whose frames never need it does not load RE2)

    return re2.compile(_LONG_NUMBER)


def says_more_than_doubles(raw: bytes) -> bool:
    """Whether ``raw`` may hold a number whose exact value its double does not have: without one (no
    token of 16 significant digits or more, no exponent of three digits) every number a parser reads
    as a double is its exact value. A linear scan (RE2), about 2 ms a MiB."""
    return _long_number().search(raw) is not None


def loads_exact(raw: bytes) -> Any:
    """``raw`` read as :func:`loads` does, but every number with a fraction or an exponent as the
    ``decimal.Decimal`` it writes: the exact value a schema's comparison is judged by (jsonschema-rs
    compares a ``Decimal`` exactly). For a second reading of a frame only, never for the first."""
    try:
        return _read_exact(raw)
    except ValueError as exc:
        raise _refusal(str(exc), raw) from None


def _refusal(message: str, raw: bytes) -> JSONSyntaxError:
    """jiter's refusal as the error of its kind (the message keeps jiter's line and column)."""
    duplicate = _DUPLICATE.match(message)
    if duplicate is not None:
        return DuplicateKeyError(
            f"the member name {duplicate.group(1)!r} appears twice in one object{_where(message)}",
            duplicate.group(1),
            _offset(raw, message),
        )
    if message.startswith("recursion limit exceeded"):
        return TooDeepError(f"nested deeper than {MAX_READ_DEPTH} levels{_where(message)}")
    return JSONSyntaxError(message)


def _where(message: str) -> str:
    found = _POSITION.search(message)
    return "" if found is None else f" (line {found.group(1)}, column {found.group(2)})"


def _offset(raw: bytes, message: str) -> int:
    """The byte offset jiter's ``line L column C`` names (1-based; a column counts the bytes of its
    line): for a member named twice, just after the second name's colon."""
    found = _POSITION.search(message)
    if found is None:
        return len(raw)
    line, column = int(found.group(1)), int(found.group(2))
    start = 0
    for _ in range(line - 1):
        start = raw.find(b"\n", start) + 1
    return min(len(raw), start + column - 1)


_read_prefix = functools.partial(jiter.from_json, partial_mode="on", cache_mode="none")
_MARK = "\x00named twice\x00"


def duplicate_pointer(raw: bytes, error: DuplicateKeyError) -> str:
    """The RFC 6901 pointer of the member ``error`` names twice in ``raw``. The document is read
    again up to the second name, given a mark for its value: the objects still open there are the
    last members of their parents, down to the one whose named member holds the mark. One parse
    of a prefix and a walk as deep as the document: bounded whatever the document holds."""
    head = raw[: error.offset].rstrip()
    head = (head[:-1] if head.endswith(b":") else head) + b":" + dumps(_MARK)
    path: list[str] = []
    try:
        node = _read_prefix(head)
    except ValueError:  # not expected of a prefix the parser itself stopped in: name the member alone
        node = None
    while isinstance(node, (dict, list)) and node:
        if isinstance(node, dict):
            if node.get(error.key) == _MARK:
                break
            key = next(reversed(node))
            path.append(_escape(key))
            node = node[key]
        else:
            path.append(str(len(node) - 1))
            node = node[-1]
    return "".join(f"/{part}" for part in path) + "/" + _escape(error.key)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def dumps(value: Any) -> bytes:
    """Serialise compactly, keys in insertion order."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _wide(value, separators=(",", ":"))


def dumps_line(value: Any) -> bytes:
    """Serialise compactly, keys in insertion order, with a trailing newline (one JSONL line)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return _wide(value, separators=(",", ":")) + b"\n"


def dumps_pretty(value: Any, *, sort_keys: bool = True) -> bytes:
    """Serialise for people: two-space indent, sorted keys (or, for a file a person keeps in their
    own order, insertion order), trailing newline."""
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    try:
        return orjson.dumps(value, option=option | _SORTED if sort_keys else option)
    except orjson.JSONEncodeError:
        return _wide(value, indent=2, sort_keys=sort_keys) + b"\n"


def canonical(value: Any) -> bytes:
    """Canonical JSON: sorted keys, no insignificant whitespace (the input of a fingerprint)."""
    try:
        return orjson.dumps(value, option=_SORTED)
    except orjson.JSONEncodeError:
        return _wide(value, separators=(",", ":"), sort_keys=True)


def finite(value: Any) -> None:
    """``None`` for a value built in Python, whose floats are its exact values (nothing to read again),
    once it is known to hold no float that is not finite: ``ValueError`` for one (JSON holds none)."""
    try:
        json.dumps(value, allow_nan=False, default=str)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None


def _wide(value: Any, **layout: Any) -> bytes:
    """What orjson cannot write and JSON holds: an integer past 64 bits (an id or a value read
    exactly, written back as exactly), a float that is not finite written ``null`` as orjson writes
    it. Anything else orjson refused is refused here too (``TypeError`` or ``ValueError``, as
    orjson's own error is both)."""
    try:
        return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, **layout).encode()
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None


def _finite(value: Any) -> Any:
    """``value`` with each float that is not finite as ``None`` (a copy where one is found)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


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
