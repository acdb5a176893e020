"""Frames no honest peer sends, as raw bytes (issue 41): deep, wide, a member named twice, numbers
past what a double holds. Hypothesis strategies and the renderer that writes what Python's own
serialisers cannot (a name twice in one object, a number token exactly as given). Holds no test."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

ODD_NUMBERS = (
    "100.00000000000000001",  # reads as 100.0; exactly, over a maximum of 100
    "99.999999999999999999",
    "100.0",
    "1E2",
    "-0",
    "1.00000000000000001",  # a double reads 1.0, an integer; exactly, no integer
    "1e400",  # past binary64: infinite as a double
    "-1e400",
    "1e-400",  # below it: 0.0 as a double
    "9007199254740993",  # 2^53 + 1: a double cannot hold it
    "18446744073709551617",  # 2^64 + 1: no 64-bit integer holds it
    "123456789012345678901234567890",
    "0.1000000000000000055511151231257827021181583404541015625",
)
"""Number tokens whose exact value and whose nearest double differ, or that no double holds."""


@dataclass(frozen=True)
class Odd:
    """A number written exactly as ``text``."""

    text: str


@dataclass(frozen=True, repr=False)
class Frame:
    """A request as sent: its bytes, its id, whether that id can be read (not when ``id`` itself is
    named twice: the answer then names none), and what makes it hostile."""

    raw: bytes
    request_id: Any
    id_known: bool = True
    twice: str | None = None  # the member named twice, if any
    depth: int = 0  # how deep it nests, when it was made deep

    def __repr__(self) -> str:  # (a failing example names the frame's start and size, not its 40 KB)
        head = self.raw[:160].decode("utf-8", "replace")
        shape = f"id={self.request_id!r}, twice={self.twice!r}, depth={self.depth}"
        return f"Frame({head!r}… {len(self.raw)} bytes, {shape})"


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(ODD_NUMBERS).map(Odd),
    )


def values() -> st.SearchStrategy[Any]:
    keys = st.text(alphabet="abcxyz/~", max_size=3)
    return st.recursive(
        scalars(), lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=16
    )


class _Writer:
    """JSON text of a value, the ``twice``-th object (in document order) naming its first member twice."""

    def __init__(self, twice: int | None) -> None:
        self.twice, self.seen, self.named = twice, 0, None

    def write(self, value: Any) -> str:
        if isinstance(value, Odd):
            return value.text
        if isinstance(value, dict):
            index, self.seen = self.seen, self.seen + 1
            members = [f"{json.dumps(key)}:{self.write(item)}" for key, item in value.items()]
            if index == self.twice:
                key = next(iter(value), "x")
                self.named = key
                members.append(f'{json.dumps(key)}:"named twice"')
                if len(members) == 1:
                    members.insert(0, f'{json.dumps(key)}:"first"')
            return "{" + ",".join(members) + "}"
        if isinstance(value, list):
            return "[" + ",".join(self.write(item) for item in value) + "]"
        return json.dumps(value)


def nest(value: Any, depth: int) -> Any:
    """``value`` inside ``depth`` levels of arrays and objects, alternately."""
    for level in range(depth):
        value = [value] if level % 2 else {"n": value}
    return value


@st.composite
def tool_calls(draw: st.DrawFn, tools: tuple[str, ...] = ("echo", "pay")) -> Frame:
    """A ``tools/call`` of one of ``tools`` (``pay`` takes an ``amount``) that may be deep, wide,
    name a member twice anywhere (the envelope's own ``id`` and ``method`` included) or carry numbers
    no double holds."""
    request_id = draw(st.one_of(st.integers(1, 2**70), st.text(alphabet="abc123", min_size=1, max_size=6)))
    tool = draw(st.sampled_from(tools))
    if tool == "pay":
        amounts = st.one_of(st.integers(-5, 200), st.floats(0, 200), st.sampled_from(ODD_NUMBERS).map(Odd))
        arguments: Any = {"amount": draw(amounts)}
    else:
        arguments = draw(st.dictionaries(st.text(alphabet="abc", max_size=2), values(), max_size=4))
    shape = draw(st.sampled_from(("plain", "deep", "wide")))
    depth = 0
    if shape == "deep":
        depth = draw(st.integers(150, 260))
        arguments = {"deep": nest(arguments, depth)}
    elif shape == "wide":
        arguments = {**arguments, "wide": [{"k": index} for index in range(draw(st.integers(500, 4000)))]}
    # ``id`` first: the envelope's first member is the one an object named twice at the top repeats.
    params = {"name": tool, "arguments": arguments}
    envelope = {"id": request_id, "jsonrpc": "2.0", "method": "tools/call", "params": params}
    twice = draw(st.one_of(st.none(), st.integers(0, 6)))
    writer = _Writer(twice)
    raw = writer.write(envelope).encode()
    return Frame(raw, request_id, id_known=twice != 0, twice=writer.named, depth=depth_of(envelope))


def depth_of(value: Any) -> int:
    """How deep ``value`` nests, as the reader counts it: the document is the first level, and every
    value inside an array or object (a scalar, an empty one) one level deeper than it."""
    deepest, level = 0, [value]
    while level:
        deepest += 1
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
    return deepest


def envelope_twice(request_id: int, member: str) -> bytes:
    """A ``tools/call`` of ``pay`` whose ``member`` is given twice: the policy-denied call first."""
    second = {"method": '"ping"', "name": '"echo"', "id": str(request_id + 1)}[member]
    params = '{"name":"pay","arguments":{"amount":99999}}'
    head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}'
    if member == "name":
        params = '{"name":"pay","arguments":{"amount":99999},"name":"echo"}'
        head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}'
        return (head + "}").encode()
    return (head + f',"{member}":{second}}}').encode()


def first_and_last(raw: bytes) -> tuple[Any, Any]:
    """``raw`` read by a parser keeping the first of a name given twice and by one keeping the last."""

    def first(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for key, value in pairs:
            kept.setdefault(key, value)
        return kept

    return json.loads(raw, object_pairs_hook=first), json.loads(raw)
