"""Every frame the server sends validates against the schema of its version (issue 2 §5)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_server.core.types import Handler
from mcp_server.registry.schemas import SchemaRegistry, violations
from mcp_server.serve.tools import ToolSet

from ..conftest import exchange, initialize_frame, meta_2026

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def assert_reply_valid(registry: SchemaRegistry, version: str, method: str, reply: dict[str, Any]) -> None:
    protocol = registry.protocol(version)
    if "error" in reply:
        found = violations(protocol.envelope_validator(protocol.error_response_def), reply)
    else:
        validator = protocol.result_validator(method)  # the whole frame: envelope and result type
        assert validator is not None, method
        found = violations(validator, reply)
    assert found == [], (version, method, reply)


def session_frames(version: str, tool_names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    def params(**extra: Any) -> dict[str, Any]:
        return meta_2026(**extra) if version == "2026-07-28" else extra

    frames: list[tuple[str, dict[str, Any]]] = []
    if version != "2026-07-28":
        frames.append(("initialize", initialize_frame(version)))
        frames.append(("", {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        frames.append(("ping", {"jsonrpc": "2.0", "id": "p", "method": "ping"}))
    else:
        frames.append(
            ("server/discover", {"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": params()})
        )
    frames.append(("tools/list", {"jsonrpc": "2.0", "id": "l", "method": "tools/list", "params": params()}))
    for index, name in enumerate(tool_names):
        frames.append(
            (
                "tools/call",
                {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params(name=name, arguments={})},
            )
        )
    frames.append(("tools/call", {"jsonrpc": "2.0", "id": "u", "method": "tools/call", "params": params(name="nope")}))
    frames.append(
        (
            "tools/call",
            {
                "jsonrpc": "2.0",
                "id": "bad",
                "method": "tools/call",
                "params": params(name="validate_asset", arguments={"schema": 3}),
            },
        )
    )
    frames.append(("", {"jsonrpc": "2.0", "id": "m", "method": "nope/nope", "params": params()}))
    return frames


@pytest.mark.parametrize("version", VERSIONS)
def test_every_reply_of_a_whole_session_validates_against_its_version(
    handler: Handler, registry: SchemaRegistry, tools: ToolSet, version: str
) -> None:
    """Issue 2 §5: the server's own outputs are fed back through the registry."""
    frames = session_frames(version, [tool.name for tool in tools])
    replies = exchange(handler, [frame for _, frame in frames])
    checked = 0
    for (method, _), reply in zip(frames, replies, strict=True):
        if reply is None:
            continue
        assert_reply_valid(registry, version, method or "ping", reply)
        checked += 1
    assert checked == len([f for f in frames if "id" in f[1]])
