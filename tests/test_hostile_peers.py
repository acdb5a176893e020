"""Hostile and careless peers (issue 30, rows 4, 5, 6, 10 and 12): clients isolated from each other,
bounded memory when a peer stops reading or sends too much, sessions that cannot lock others out, one
approval carried out once across replicas, and SIGTERM heard whatever the peers do. Real processes,
real clients (httpx, the official `mcp` SDK), a real upstream written with the SDK.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from .conftest import ROOT
from .gateway.test_gateway_http import HEADERS, VERSION, body_of, http_gateway, rpc

WAIT = 30.0
PEER_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "peer_server.py")]
STATELESS = "2026-07-28"


def _meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "debug",
    }


def _call(request_id: int | str, tool: str, tag: str, *, progress: Any = None) -> dict[str, Any]:
    meta = _meta() if progress is None else {**_meta(), "progressToken": progress}
    return rpc(request_id, "tools/call", {"name": tool, "arguments": {"tag": tag}, "_meta": meta})


def _headers(tool: str, *, sse: bool) -> dict[str, str]:
    accept = "application/json, text/event-stream" if sse else "application/json"
    return {**HEADERS, "Accept": accept, "MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/call", "Mcp-Name": tool}


def _events(text: str) -> list[dict[str, Any]]:
    """Every JSON-RPC message of an SSE body (or the one JSON body)."""
    if not text.lstrip().startswith("{"):
        return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(text)]


# -- Row 4: clients are isolated --------------------------------------------------------------------


async def _stateless_pair(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """A's call (JSON only) and B's (SSE), both in flight on the shared upstream, the same progress
    token; B posts ``notifications/cancelled`` naming A's id; then both are released."""
    async with httpx.AsyncClient(timeout=WAIT) as a, httpx.AsyncClient(timeout=WAIT) as b:

        async def post(client: httpx.AsyncClient, frame: dict[str, Any], tool: str, *, sse: bool) -> httpx.Response:
            return await client.post(url, json=frame, headers=_headers(tool, sse=sse))

        a_call = asyncio.ensure_future(post(a, _call(1, "gate", "A", progress="p"), "gate", sse=False))
        await post(b, _call(90, "arrived", "A"), "arrived", sse=False)  # A's call runs upstream
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        cancelled = await b.post(url, json=cancel, headers={**_headers("gate", sse=False), "Mcp-Method": cancel["method"]})
        b_call = asyncio.ensure_future(post(b, _call(2, "gate", "B", progress="p"), "gate", sse=True))
        await post(b, _call(91, "arrived", "B"), "arrived", sse=False)
        await post(b, _call(92, "release", "A"), "release", sse=False)
        a_answer = await asyncio.wait_for(a_call, WAIT)
        await post(a, _call(93, "release", "B"), "release", sse=False)
        b_answer = await asyncio.wait_for(b_call, WAIT)
        return _events(a_answer.text), _events(b_answer.text), cancelled.status_code


async def _stateful_pair(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two sessions, each with its own upstream: B cancels A's request id in its own session."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    async with httpx.AsyncClient(timeout=WAIT) as client:

        async def opened() -> dict[str, str]:
            response = await client.post(url, json=rpc(0, "initialize", params), headers=HEADERS)
            headers = {**HEADERS, "Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": VERSION}
            await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            await client.post(url, json=rpc(0, "logging/setLevel", {"level": "debug"}), headers=headers)
            return headers

        def call(request_id: int, tool: str, tag: str) -> dict[str, Any]:
            return rpc(request_id, "tools/call", {"name": tool, "arguments": {"tag": tag}, "_meta": {"progressToken": "p"}})

        a, b = await opened(), await opened()
        a_call = asyncio.ensure_future(client.post(url, json=call(1, "gate", "SA"), headers=a))
        await client.post(url, json=call(2, "arrived", "SA"), headers=a)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        await client.post(url, json=cancel, headers=b)
        b_call = asyncio.ensure_future(client.post(url, json=call(1, "gate", "SB"), headers=b))
        await client.post(url, json=call(2, "arrived", "SB"), headers=b)
        await client.post(url, json=call(3, "release", "SA"), headers=a)
        await client.post(url, json=call(3, "release", "SB"), headers=b)
        a_answer, b_answer = await asyncio.wait_for(asyncio.gather(a_call, b_call), WAIT)
        return _events(a_answer.text), _events(b_answer.text)


def _texts(events: list[dict[str, Any]]) -> list[str]:
    """What each message says: a log's data, a progress message, a result's text."""
    said = []
    for event in events:
        params = event.get("params") or {}
        if "data" in params:
            said.append(str(params["data"]))
        elif "message" in params:
            said.append(str(params["message"]))
        elif "result" in event:
            said.append("result " + event["result"]["content"][0]["text"])
        else:
            said.append(json.dumps(event))
    return said


def test_a_client_cancels_only_its_own_requests_and_sees_only_their_notifications(tmp_path: Path) -> None:
    """Issue 30 row 4: on every HTTP path a request is known by the exchange that carried it: B's
    ``notifications/cancelled`` with A's id does not end A's call (2026-07-28 cancels by closing the
    request), A's log and progress never reach B's stream, a shared progress token included."""
    with http_gateway(tmp_path, upstream=PEER_UPSTREAM) as gateway:
        a_seen, b_seen, cancel_status = asyncio.run(_stateless_pair(gateway.url))
        sa_seen, sb_seen = asyncio.run(_stateful_pair(gateway.url))
    assert cancel_status == 202
    assert "result A" in _texts(a_seen) and a_seen[-1]["id"] == 1
    assert "result B" in _texts(b_seen) and b_seen[-1]["id"] == 2
    assert not any(text.startswith("A ") for text in _texts(b_seen)), b_seen
    for event in b_seen:
        if event.get("method") == "notifications/progress":
            assert event["params"]["progressToken"] == "p"  # B's own token back, whatever went upstream
    assert "result SA" in _texts(sa_seen) and "SA log" in _texts(sa_seen)
    assert "result SB" in _texts(sb_seen) and not any(text.startswith("SA") for text in _texts(sb_seen))
