"""`subscriptions/listen` (MCP 2026-07-28, SEP-2575) through the gateway's HTTP front (issue 22).

Real processes and sockets: the gateway under uvicorn with the SDK conformance target behind it over
STDIO, raw httpx streaming POSTs (each listen stream is one POST's SSE response) or the official
`mcp` SDK client in front.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp.client.client import Client
from mcp.shared.subscriptions import ToolsListChanged

from .gateways import HEADERS, WAIT, body_of, http_gateway, report_of, rpc

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"


class Listening:
    """One open listen stream: its frames, one at a time, each within the test's bound."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def next(self) -> dict[str, Any]:
        async def frame() -> dict[str, Any]:
            async for line in self._lines:
                if line.startswith("data:"):
                    found: dict[str, Any] = json.loads(line[5:])
                    return found
            raise AssertionError("the listen stream ended")

        return await asyncio.wait_for(frame(), WAIT)

    async def frames(self, count: int) -> list[tuple[Any, Any]]:
        """The next ``count`` frames as (method, subscription id) pairs."""
        seen = [await self.next() for _ in range(count)]
        return [(frame.get("method"), frame.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_ID)) for frame in seen]


@asynccontextmanager
async def listening(client: httpx.AsyncClient, url: str, request_id: Any, **wanted: bool) -> AsyncIterator[Listening]:
    """A ``subscriptions/listen`` POST held open; leaving closes it (the client drops the stream)."""
    headers = {**HEADERS, "MCP-Protocol-Version": VERSION, "Mcp-Method": "subscriptions/listen"}
    params = {"_meta": META, "notifications": wanted}
    async with client.stream("POST", url, json=rpc(request_id, "subscriptions/listen", params), headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        yield Listening(r.aiter_lines())


async def trigger(client: httpx.AsyncClient, url: str, tool: str) -> None:
    """A call of one of the target's tools that change a list (and say so twice)."""
    headers = {**HEADERS, "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    params = {"name": tool, "arguments": {}, "_meta": META}
    reply = body_of(await client.post(url, json=rpc(f"call-{tool}", "tools/call", params), headers=headers))
    assert "result" in reply, reply


def test_a_listen_stream_gets_its_acknowledgement_and_every_list_change_while_a_call_is_open(tmp_path: Path) -> None:
    """SEP-2575: every notification of a subscription goes on its listen stream, tagged with its id,
    even while another request's stream is open (the call that changes the list)."""

    async def run(url: str) -> list[tuple[Any, Any]]:
        async with (
            httpx.AsyncClient(timeout=WAIT) as client,
            listening(client, url, 41, toolsListChanged=True) as stream,
        ):
            first = await stream.frames(1)
            await trigger(client, url, "test_trigger_tool_change")
            return first + await stream.frames(2)

    with http_gateway(tmp_path) as gateway:
        seen = asyncio.run(asyncio.wait_for(run(gateway.url), WAIT))
    assert seen == [(ACKNOWLEDGED, 41), (TOOLS_CHANGED, 41), (TOOLS_CHANGED, 41)]


def test_two_listen_streams_with_one_id_each_get_only_their_own_notifications(tmp_path: Path) -> None:
    """SEP-2575: the subscription id tells a subscription's notifications apart; two clients' listens
    may share an id (issue 9: ids never collide upstream), and each stream sees its own id."""

    async def run(url: str) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
        async with (
            httpx.AsyncClient(timeout=WAIT) as client,
            listening(client, url, 5, toolsListChanged=True) as tools,
            listening(client, url, 5, promptsListChanged=True) as prompts,
        ):
            acks = (await tools.frames(1), await prompts.frames(1))
            for tool in ["test_trigger_tool_change", "test_trigger_prompt_change"] * 2:
                await trigger(client, url, tool)
            return acks[0] + await tools.frames(4), acks[1] + await prompts.frames(4)

    with http_gateway(tmp_path) as gateway:
        tools, prompts = asyncio.run(asyncio.wait_for(run(gateway.url), WAIT))
    assert tools == [(ACKNOWLEDGED, 5)] + [(TOOLS_CHANGED, 5)] * 4
    assert prompts == [(ACKNOWLEDGED, 5)] + [(PROMPTS_CHANGED, 5)] * 4


def test_a_dropped_listen_stream_is_cancelled_upstream_and_its_id_listens_again(tmp_path: Path) -> None:
    """MCP 2026-07-28: over HTTP a client cancels by closing the request; over STDIO the upstream is
    told by ``notifications/cancelled`` (basic/utilities/cancellation), and a new listen is answered."""

    async def run(url: str) -> list[tuple[Any, Any]]:
        async with httpx.AsyncClient(timeout=WAIT) as client:
            async with listening(client, url, 9, toolsListChanged=True) as dropped:
                assert await dropped.frames(1) == [(ACKNOWLEDGED, 9)]
            async with listening(client, url, 9, toolsListChanged=True) as again:
                first = await again.frames(1)
                await trigger(client, url, "test_trigger_tool_change")
                return first + await again.frames(2)

    with http_gateway(tmp_path) as gateway:
        seen = asyncio.run(asyncio.wait_for(run(gateway.url), WAIT))
    assert seen == [(ACKNOWLEDGED, 9), (TOOLS_CHANGED, 9), (TOOLS_CHANGED, 9)]
    ended = [(entry["id"], entry["method"], entry["reason"]) for entry in report_of(tmp_path)["unanswered"]]
    assert len(ended) == 2  # the second listen ends with the test: dropped too, or the gateway's stop
    assert ended[0] == (9, "subscriptions/listen", "client_cancelled")


def test_the_official_client_listens_again_after_leaving_a_subscription(tmp_path: Path) -> None:
    """SEP-2575: a client that leaves a subscription closes its stream; its next one is acknowledged
    and gets the upstream's list changes, as served directly."""

    async def run(url: str) -> list[Any]:
        events: list[Any] = []
        async with Client(url, mode=VERSION, read_timeout_seconds=WAIT) as client:
            for _ in range(2):
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("test_trigger_tool_change", {})
                    events.append(await anext(subscription))
        return events

    with http_gateway(tmp_path) as gateway:
        events = asyncio.run(asyncio.wait_for(run(gateway.url), WAIT))
    assert events == [ToolsListChanged(), ToolsListChanged()]
    assert [entry["reason"] for entry in report_of(tmp_path)["unanswered"]][:1] == ["client_cancelled"]
