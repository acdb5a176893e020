"""What a frame over its limit still says: its transport keeps its first and last bytes, and the
request id, method and kind are read from them, so the side that waits is answered by its id.

Nothing here parses the whole frame: the head is read forwards and the tail backwards, each as far
as the top-level members go (an SDK writes ``id`` first; a frame that writes it last has it in the
tail). A member neither end holds is unknown. Pure; no I/O.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from . import jsonio

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "Recovered", "excerpt", "recover"]

HEAD_BYTES = 4096
"""The bytes kept from the start of a frame over its limit."""
TAIL_BYTES = 4096
"""The bytes kept from its end (after the head: the two never overlap)."""

_SPACE = b" \t\r\n"
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STRUCTURE = re.compile(rb'["{}\[\]]')
_SCALAR_END = re.compile(rb"[,}\]\s]")
_WANTED = ("id", "method")


class Recovered(NamedTuple):
    """The top-level members read from a frame's ends: their names, and ``id`` and ``method`` when
    they are plain values (an id a string or an integer, a method a string)."""

    members: frozenset[str]
    id: str | int | None = None
    method: str | None = None


class _Truncated(Exception):
    """The excerpt ends before the member being read does."""


def excerpt(frame: bytes) -> bytes:
    """What is kept of a whole ``frame`` over its limit: its head and its tail (all of it when short)."""
    return frame[:HEAD_BYTES] + frame[max(HEAD_BYTES, len(frame) - TAIL_BYTES) :]


def recover(raw: bytes, size: int) -> Recovered:
    """What ``raw`` says of a frame of ``size`` bytes: the whole frame when ``len(raw) == size``,
    else its first ``HEAD_BYTES`` bytes followed by its last bytes (``excerpt``). A frame longer
    than its two ends is read at its ends only: the cost is bounded whatever its size."""
    found: dict[str, Any] = {}
    if len(raw) > HEAD_BYTES + TAIL_BYTES:
        raw = excerpt(raw)  # a frame held whole (observe mode) is read no further than its ends either
    if len(raw) >= size:
        _forwards(raw, found)
    else:
        _forwards(raw[:HEAD_BYTES], found)
        _backwards(raw[HEAD_BYTES:], found)
    request_id, method = found.get("id"), found.get("method")
    if request_id is _TWICE or isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return Recovered(frozenset(found), request_id, method if isinstance(method, str) else None)


_TWICE: Any = object()  # a member named twice with two values: neither is its value


def _keep(found: dict[str, Any], key: str, value: Any) -> None:
    """``value`` of ``key``, unless the frame names ``key`` twice with another value: then none."""
    if key in found and found[key] != value:
        value = _TWICE
    found[key] = value


def _space(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in _SPACE:
        at += 1
    return at


def _forwards(data: bytes, found: dict[str, Any]) -> None:
    """The top-level members from the start of the frame, until the data ends."""
    at = _space(data, 0)
    if data[at : at + 1] != b"{":
        return
    at += 1
    try:
        while True:
            at = _space(data, at)
            string = _STRING.match(data, at)
            if string is None:
                return
            key = jsonio.loads(string.group())
            at = _space(data, string.end())
            if data[at : at + 1] != b":":
                return
            start = _space(data, at + 1)
            if key not in _WANTED:
                found.setdefault(key, None)  # the member is there, even if its value runs past the head
            at = _skip_value(data, start)
            if key in _WANTED:
                _keep(found, key, _scalar(data[start:at]))
            at = _space(data, at)
            if data[at : at + 1] != b",":
                return
            at += 1
    except (_Truncated, jsonio.JSONSyntaxError):
        return


def _skip_value(data: bytes, at: int) -> int:
    """Where the value starting at ``at`` ends (``_Truncated`` when the data ends first)."""
    opening = data[at : at + 1]
    if opening == b'"':
        string = _STRING.match(data, at)
        if string is None:
            raise _Truncated
        return string.end()
    if opening in (b"{", b"["):
        depth = 0
        while (mark := _STRUCTURE.search(data, at)) is not None:
            char = mark.group()
            if char == b'"':
                string = _STRING.match(data, mark.start())
                if string is None:
                    raise _Truncated
                at = string.end()
                continue
            depth += 1 if char in (b"{", b"[") else -1
            at = mark.end()
            if depth == 0:
                return at
        raise _Truncated
    end = _SCALAR_END.search(data, at)
    if end is None:
        raise _Truncated
    return end.start()


def _scalar(text: bytes) -> Any:
    """A plain value (a string, a number, a literal); anything else is not one of the members read."""
    if text[:1] in (b"{", b"["):
        return None
    return jsonio.loads(text)


def _backwards(data: bytes, found: dict[str, Any]) -> None:
    """The top-level members from the end of the frame, until the data (the tail) runs out."""
    at = _space_back(data, len(data))
    if at == 0 or data[at - 1 : at] != b"}":
        return
    at -= 1
    try:
        while True:
            end = _space_back(data, at)
            start = _value_start(data, end)
            colon = _space_back(data, start)
            if data[colon - 1 : colon] != b":":
                return
            key_end = _space_back(data, colon - 1)
            if data[key_end - 1 : key_end] != b'"':
                return
            key_start = _string_start(data, key_end - 1)
            key = jsonio.loads(data[key_start:key_end])
            if key in _WANTED:
                _keep(found, key, _scalar(data[start:end]))
            else:
                found.setdefault(key, None)
            at = _space_back(data, key_start)
            if data[at - 1 : at] != b",":
                return
            at -= 1
    except (_Truncated, jsonio.JSONSyntaxError):
        return


def _space_back(data: bytes, at: int) -> int:
    while at > 0 and data[at - 1] in _SPACE:
        at -= 1
    return at


def _string_start(data: bytes, closing: int) -> int:
    """The opening quote of the string whose closing quote is at ``closing``: the nearest quote before
    it not escaped (preceded by an even number of backslashes)."""
    at = closing
    while True:
        at = data.rfind(b'"', 0, at)
        if at < 0:
            raise _Truncated
        slashes = 0
        while at - slashes > 0 and data[at - slashes - 1] == 0x5C:
            slashes += 1
        if slashes % 2 == 0:
            return at


def _value_start(data: bytes, end: int) -> int:
    """Where the value ending at ``end`` starts, read backwards."""
    if end == 0:
        raise _Truncated
    last = data[end - 1 : end]
    if last == b'"':
        return _string_start(data, end - 1)
    if last in (b"}", b"]"):
        depth, at = 0, end
        while at > 0:
            at -= 1
            char = data[at : at + 1]
            if char == b'"':
                at = _string_start(data, at)
            elif char in (b"}", b"]"):
                depth += 1
            elif char in (b"{", b"["):
                depth -= 1
                if depth == 0:
                    return at
        raise _Truncated
    at = end
    while at > 0 and data[at - 1 : at] not in (b":", b",", b"{", b"[") and data[at - 1] not in _SPACE:
        at -= 1
    if at == 0:
        raise _Truncated
    return at
