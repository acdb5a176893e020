"""The version a server answered: a session goes on at it whatever else the `initialize` reply gets
wrong, and the reply's own violations are the server's, once (ADR 42). The same in the live gateway
(enforce and observe), in `check` on the capture of its session, and in the ledger they share.

Real processes: the gateway, a raw upstream whose one fault is its `initialize` reply's
`serverInfo` without `version` (`tests/upstreams/versionless_server.py`), the recording tap between
them, and the official `mcp` SDK client in front.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mcp_server.core.errors import CanonicalError
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Message
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import ROOT, cli, initialize_frame, server_env
from .observing import observing, take

WAIT = 60.0
VERSION = "2025-11-25"
TAP = [sys.executable, str(ROOT / "tests" / "upstreams" / "recording.py")]
VERSIONLESS = [sys.executable, str(ROOT / "tests" / "upstreams" / "versionless_server.py")]
COMPARED = ("violations", "violations_by_party", "violations_by_method")
# The one fault, as the schema names it: `Implementation` requires `version` in every bundled version.
FAULT = {"path": "/result/serverInfo", "msg": '"version" is a required property'}


async def _carry_on(parameters: StdioServerParameters, errlog: Any) -> tuple[Exception, list[str], str]:
    """The official client's session: its `initialize` (which fails), then, as a client that goes on
    at the version the server answered, `initialized`, `tools/list` and a `tools/call`. Returns the
    failure, the tools listed and the call's text."""
    async with (
        stdio_client(parameters, errlog=errlog) as (read, write),
        ClientSession(read, write, read_timeout_seconds=WAIT) as session,
    ):
        offer = types.InitializeRequestParams(
            protocol_version=VERSION,
            capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="carry-on", version="1"),
        )
        with pytest.raises((MCPError, ValidationError)) as failed:
            await session.send_request(types.InitializeRequest(params=offer), types.InitializeResult)
        answered = types.InitializeResult(
            protocol_version=VERSION,
            capabilities=types.ServerCapabilities(tools=types.ToolsCapability()),
            server_info=types.Implementation(name="versionless", version="unknown"),
        )
        session.adopt(answered)
        await session.send_notification(types.InitializedNotification())
        listed = await session.list_tools()
        echoed = await session.call_tool("echo", {"text": "hello"})
        assert isinstance(echoed.content[0], types.TextContent)
        return failed.value, [tool.name for tool in listed.tools], echoed.content[0].text


def _live_run(tmp_path: Path, mode: str, capture: Path) -> tuple[Exception, list[str], str, dict[str, Any]]:
    """The client's session through a real gateway in ``mode``, each frame crossing to the upstream
    recorded in ``capture``; what the client saw, and the gateway's report."""
    runs = tmp_path / "runs"
    command = [sys.executable, "-m", "mcp_server", "gateway", "--mode", mode, "--", *TAP, str(capture), "--"]
    parameters = StdioServerParameters(
        command=command[0], args=[*command[1:], *VERSIONLESS], env=server_env(tmp_path, MCP_RUNS_DIR=str(runs))
    )
    with (tmp_path / "gateway.stderr").open("w") as errlog:
        failed, tools, text = asyncio.run(asyncio.wait_for(_carry_on(parameters, errlog), WAIT))
    [report] = (runs / "mcp_server" / "gateway").glob("*-report.json")
    return failed, tools, text, json.loads(report.read_text())


def _said(examples: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[Any, ...]]]:
    """What each example says of the violation (not how it was acted on, nor where it was read)."""
    return {
        rule: [(e["party"], e["method"], [{"path": x["path"], "msg": x["msg"]} for x in e["errors"]]) for e in listed]
        for rule, listed in examples.items()
    }


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_session_goes_on_at_the_version_the_server_answered_whatever_else_its_reply_gets_wrong(
    tmp_path: Path, mode: str
) -> None:
    """ADR 42 (spec basic/lifecycle, version negotiation): an `initialize` reply refused for its
    `serverInfo` still answered 2025-11-25, so the client's valid 2025-11-25 `tools/list` and
    `tools/call` pass (they were refused as `invalid_request_meta`, the client blamed), and the one
    violation is the server's; `check` on the capture of the same session says the same."""
    capture = tmp_path / "capture.ndjson"
    failed, tools, text, live = _live_run(tmp_path, mode, capture)
    if mode == "enforce":  # refused in place: the client's initialize is answered with the rule broken
        assert isinstance(failed, MCPError)
        assert failed.error.code == CanonicalError.UPSTREAM_INVALID_REPLY.mcp_code
        assert failed.error.data["rule"] == CanonicalError.INVALID_PARAMS.slug
    else:  # passed on: the SDK refuses the same fault itself
        assert isinstance(failed, ValidationError) and "serverInfo.version" in str(failed)
    assert (tools, text) == (["echo"], "hello")
    assert live["violations"] == {"invalid_params": 1}
    assert live["violations_by_party"] == {"invalid_params": {"upstream": 1}}
    assert live["violations_by_method"] == {"invalid_params": {"initialize (response)": 1}}
    assert _said(live["examples"]) == {"invalid_params": [("upstream", "initialize", [FAULT])]}
    [session] = live["sessions"]
    assert session["protocol_version"] == VERSION
    checked = cli(tmp_path, "check", str(capture), "--format", "json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    offline = json.loads(checked.stdout)
    assert offline["protocol_version"] == VERSION
    for section in COMPARED:
        assert offline[section] == live[section], section
    assert _said(offline["examples"]) == _said(live["examples"])
    assert offline["frames"] == live["frames"]


@pytest.mark.parametrize(
    ("answered", "version", "reported"),
    [
        ("2025-06-18", "2025-06-18", {}),  # a counter-offer a client may take: the session goes on at it
        ("2099-01-01", "2025-11-25", {"unsupported_protocol_version": 1}),  # not bundled here
        ("2026-07-28", "2025-11-25", {"unsupported_protocol_version": 1}),  # no handshake version
    ],
    ids=["bundled", "not-bundled", "stateless"],
)
def test_an_initialize_reply_naming_no_handshake_version_bundled_here_is_reported_and_the_offer_stands(
    registry: SchemaRegistry, answered: str, version: str, reported: dict[str, int]
) -> None:
    """ADR 42: the session is held to a version it can be checked at, the one the server answered
    when bundled, else the client's offer, the server reported (it failed every later frame as an
    internal error in the gateway, and blamed the client's requests at 2026-07-28)."""
    ledger = observing(registry)
    take(ledger, CLIENT_TO_SERVER, initialize_frame(VERSION, 1))
    result = {"protocolVersion": answered, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    take(ledger, SERVER_TO_CLIENT, {"jsonrpc": "2.0", "id": 1, "result": result})
    assert ledger.session.version == version
    assert isinstance(take(ledger, CLIENT_TO_SERVER, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), Message)
    assert isinstance(take(ledger, SERVER_TO_CLIENT, {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}), Message)
    assert dict(ledger.report.violations) == reported
    assert all(party == "upstream" for (_, party) in ledger.report.by_party)
