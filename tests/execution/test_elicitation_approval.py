"""Approval by elicitation: the official `mcp` SDK client declares elicitation and answers (issue 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError
from mcp_server.execution.approvals import arguments_digest

from ..conftest import server_command, server_env

TIMEOUT = 30.0
POLICY = """
[approval]
deadline_seconds = 20

[[tool]]
match = "diff_assets"
approval = true
"""


def parameters(tmp_path: Path) -> StdioServerParameters:
    (tmp_path / "policy.toml").write_text(POLICY)
    command = [*server_command(), "--policy", str(tmp_path / "policy.toml")]
    return StdioServerParameters(command=command[0], args=command[1:], env=server_env(tmp_path))


def call_with_answer(tmp_path: Path, approve: bool) -> tuple[Any, list[str]]:
    """diff_assets through the SDK client whose elicitation callback answers ``approve``."""
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    async def session() -> Any:
        async with Client(
            parameters(tmp_path), mode="legacy", read_timeout_seconds=TIMEOUT, elicitation_callback=answer
        ) as client:
            try:
                return await client.call_tool("diff_assets", {"base": {"a": 1}, "new": {"a": 2}})
            except MCPError as exc:
                return exc

    return asyncio.run(asyncio.wait_for(session(), TIMEOUT)), asked


def test_a_held_call_runs_when_the_client_user_approves_through_elicitation(tmp_path: Path) -> None:
    """Issue 6: when the MCP client declared elicitation, approval is asked through an elicitation request."""
    result, asked = call_with_answer(tmp_path, approve=True)
    assert result.is_error is False and result.structured_content["ok"] is True
    [message] = asked
    assert arguments_digest({"base": {"a": 1}, "new": {"a": 2}}) in message


def test_a_held_call_is_denied_when_the_client_user_declines(tmp_path: Path) -> None:
    """Issue 6: an elicitation answered without approval denies the call, a catalogued policy violation."""
    error, asked = call_with_answer(tmp_path, approve=False)
    assert isinstance(error, MCPError) and len(asked) == 1
    assert error.error.code == CanonicalError.APPROVAL_DENIED.mcp_code
    assert error.error.data["policy_violation"] is True


@pytest.mark.parametrize("approve", [True])
def test_the_client_can_keep_talking_while_a_call_is_held(tmp_path: Path, approve: bool) -> None:
    """Issue 6: the connection keeps being read while the server waits for the elicitation answer."""

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": approve})

    async def session() -> None:
        async with Client(
            parameters(tmp_path), mode="legacy", read_timeout_seconds=TIMEOUT, elicitation_callback=answer
        ) as client:
            held = asyncio.ensure_future(client.call_tool("diff_assets", {"base": [], "new": [1]}))
            listed = await client.list_tools()
            assert "diff_assets" in {tool.name for tool in listed.tools}
            assert (await held).is_error is False

    asyncio.run(asyncio.wait_for(session(), TIMEOUT))
