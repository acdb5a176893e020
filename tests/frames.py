"""MCP frames of each bundled version, read from its schema file: the methods it names, frames a
client plausibly sends, and Hypothesis strategies of sound, mutated and arbitrary frames. Shared by the
library's and the chain's property tests (holds no test)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from mcp_server.core import jsonio

from .conftest import ROOT, initialize_frame, meta_2026

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
STATELESS = "2026-07-28"


def schema_of(version: str) -> dict[str, Any]:
    document: dict[str, Any] = jsonio.loads((ROOT / "schemas" / "mcp" / version / "schema.json").read_bytes())
    return document


def definitions_of(version: str) -> dict[str, Any]:
    document = schema_of(version)
    return dict(document.get("$defs") or document["definitions"])


def methods_in(version: str, *unions: str) -> set[str]:
    """Method names read straight from the schema file: each union member's ``method`` const."""
    definitions = definitions_of(version)
    found = set()
    for union in unions:
        for member in definitions.get(union, {}).get("anyOf", []):
            name = member["$ref"].rsplit("/", 1)[-1]
            found.add(definitions[name]["properties"]["method"]["const"])
    return found


def params(version: str, **fields: Any) -> dict[str, Any]:
    """Request params as ``version`` wants them (2026-07-28 carries the per-request ``_meta``)."""
    return meta_2026(**fields) if version == STATELESS else fields


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def sound_frames(version: str) -> list[dict[str, Any]]:
    """Frames a client plausibly sends at ``version`` (most valid; the chain is the oracle, not this list)."""
    call = params(version, name="add", arguments={"a": 1})
    frames: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/list", "params": params(version)},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    ]
    if version != STATELESS:  # 2026-07-28: progress is the server's only, and there is no handshake
        frames += [
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 0.5}},
            initialize_frame(version, 3),
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
    else:
        frames.append({"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": params(version)})
    return frames


def mutated_frame(frame: dict[str, Any], change: str, value: Any) -> dict[str, Any]:
    frame = copy.deepcopy(frame)
    if change == "id":
        frame["id"] = value
    elif change == "drop":
        frame.pop(value, None)
    elif change == "params":
        frame["params"] = value
    elif change == "param" and isinstance(frame.get("params"), dict):
        frame["params"]["name" if "name" in frame["params"] else "requestId"] = value
    elif change == "method":
        frame["method"] = value
    elif change == "jsonrpc":
        frame["jsonrpc"] = value
    return frame


def frames_for(version: str) -> Any:
    """Requests and notifications, valid and not: sound frames, mutated ones, and arbitrary ones."""
    methods = sorted(methods_in(version, "ClientRequest", "ServerRequest", "ClientNotification", "ServerNotification"))
    sound = st.sampled_from(sound_frames(version))
    changes = st.one_of(
        st.tuples(st.just("none"), st.none()),
        st.tuples(st.just("id"), st.integers(-5, 5) | st.text(max_size=3) | st.none() | st.floats(allow_nan=False)),
        st.tuples(st.just("drop"), st.sampled_from(["id", "params", "jsonrpc"])),
        st.tuples(st.just("params"), json_values),
        st.tuples(st.just("param"), json_values),
        st.tuples(st.just("method"), st.sampled_from([*methods, "no/such"])),
        st.tuples(st.just("jsonrpc"), st.sampled_from(["1.0", 2])),
    )
    mutated = st.builds(lambda frame, change: mutated_frame(frame, *change), sound, changes)
    arbitrary = st.fixed_dictionaries(
        {"method": st.sampled_from([*methods, "no/such"]) | st.integers(0, 3)},
        optional={"jsonrpc": st.just("2.0"), "id": st.integers(0, 9), "params": json_values},
    )
    return st.one_of(sound, mutated, mutated, mutated, arbitrary, st.binary(max_size=24))
