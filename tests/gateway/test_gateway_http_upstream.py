"""`mcp-server gateway --upstream URL`: the upstream session's GET stream (issue 18).

The SDK server in `tests/upstreams/get_stream_server.py` sends on its session's GET stream what
belongs to no request of the client's. The gateway opens that stream once the upstream session
exists, keeps it, resumes it after a drop (from the last event id), and routes what comes on it to
the client: here the official SDK client, on the gateway's STDIO front.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from ..conftest import ROOT, server_env
from ..processes import free_port, running
from .gateways import report_of

WAIT = 30.0
GET_STREAM_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "get_stream_server.py")]


class Updates:
    """The `notifications/resources/updated` the client received, by URI, waited on with a bound."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.changed = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.changed.set()

    async def wait_for(self, uri: str) -> None:
        async with asyncio.timeout(WAIT):
            while uri not in self.uris:
                self.changed.clear()
                await self.changed.wait()


async def _answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"answer": "ada"})


def _through_gateway(tmp_path: Path, upstream_url: str, updates: Updates) -> Client:
    command = [sys.executable, "-m", "mcp_server", "gateway", "--upstream", upstream_url]
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    )
    return Client(
        parameters, mode="legacy", read_timeout_seconds=WAIT, message_handler=updates, elicitation_callback=_answer
    )


def test_what_an_http_upstream_sends_on_its_get_stream_reaches_the_client(tmp_path: Path) -> None:
    """Spec transports, "Listening for Messages from the Server": a notification and a request the
    upstream sends on its GET stream reach the client; the client's answer reaches the upstream."""

    async def session(upstream_url: str) -> str:
        updates = Updates()
        async with _through_gateway(tmp_path, upstream_url, updates) as client:
            await client.call_tool("announce", {"uri": "test://first"})
            await updates.wait_for("test://first")
            asked = await client.call_tool("ask", {"question": "Your name?"})
            return asked.content[0].text  # type: ignore[union-attr]

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*GET_STREAM_UPSTREAM, str(port)], url, server_env(tmp_path)):
        answer = asyncio.run(asyncio.wait_for(session(url), WAIT))
    assert answer == "accept: ada"
    assert report_of(tmp_path)["violations"] == {}


def test_a_dropped_get_stream_is_resumed_from_the_last_event_id(tmp_path: Path) -> None:
    """Spec transports, "Resumability and Redelivery": after the server closes the GET stream, the
    gateway reconnects with `Last-Event-ID`; the event sent while it was down is replayed, not lost."""

    async def session(upstream_url: str) -> list[str]:
        updates = Updates()
        async with _through_gateway(tmp_path, upstream_url, updates) as client:
            await client.call_tool("announce", {"uri": "test://before"})
            await updates.wait_for("test://before")  # the gateway holds this event's id
            await client.call_tool("drop_then_announce", {"uri": "test://while-down"})
            await updates.wait_for("test://while-down")
            await client.call_tool("announce", {"uri": "test://after"})
            await updates.wait_for("test://after")
        return updates.uris

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*GET_STREAM_UPSTREAM, str(port)], url, server_env(tmp_path)):
        uris = asyncio.run(asyncio.wait_for(session(url), WAIT * 2))
    assert uris == ["test://before", "test://while-down", "test://after"]
