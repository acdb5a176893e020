"""The official `mcp` SDK's stdio client drives `mcp-server serve` (issue 2 §7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from ..conftest import server_command, server_env

TIMEOUT = 30.0


def parameters(tmp_path: Path) -> StdioServerParameters:
    command = server_command()
    return StdioServerParameters(command=command[0], args=command[1:], env=server_env(tmp_path))


@pytest.mark.parametrize(
    ("mode", "expected"), [("legacy", "2025-11-25"), ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28")]
)
def test_the_official_client_initializes_lists_and_calls_tools(tmp_path: Path, mode: str, expected: str) -> None:
    """Issue 2 §7: a real client at 2025-11-25 (handshake) and at 2026-07-28 (discover, no handshake)."""

    async def session() -> None:
        async with Client(parameters(tmp_path), mode=mode, read_timeout_seconds=TIMEOUT) as client:
            assert client.protocol_version == expected
            listed = await client.list_tools()
            names = {tool.name for tool in listed.tools}
            assert {"list_schemas", "validate_asset"} <= names
            good = await client.call_tool(
                "validate_asset", {"asset": {"type": "text", "text": "hi"}, "schema": "TextContent"}
            )
            assert good.is_error is False
            assert good.structured_content == {"ok": True, "errors": []}
            assert json.loads(good.content[0].text) == good.structured_content
            bad = await client.call_tool("validate_asset", {"asset": {"type": "text"}, "schema": "TextContent"})
            assert bad.is_error is True
            assert bad.structured_content["reason"] == "validation_failed"

    asyncio.run(asyncio.wait_for(session(), TIMEOUT))
