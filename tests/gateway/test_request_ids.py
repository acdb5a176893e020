"""One request per id in flight (ADR 43), end to end: a client's second request under an id its first
still waits on is refused and the first is answered once, under its id; a request under an id a
request of the gateway's own holds goes on renamed and is answered under its own id.

Real processes: the gateway as a subprocess on STDIO and on HTTP, alone, as an aggregate and as an era
bridge; a slow upstream written with the official `mcp` SDK (`peer_server.py`: `gate` runs until
`release`, `arrived` says it runs; `hold_lists` holds its `tools/list` until `release_lists`), a raw
scripted one for a server's duplicate; the raw NDJSON and HTTP clients, which choose their ids, and
the official SDK client, which cannot (an ordinary session, unchanged). Every wait is on a reply.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, initialize_frame, server_env
from .aggregate_servers import server, write_config
from .gateways import (
    HEADERS,
    STATELESS_HEADERS,
    VERSION,
    WAIT,
    Lines,
    body_of,
    gateway_command,
    http_gateway,
    report_of,
    rpc,
)

PEER_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "peer_server.py")]
SCRIPTED = [sys.executable, str(ROOT / "tests" / "upstreams" / "scripted_server.py")]
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/logLevel": "info",  # `gate` logs: the call states a level for it to ride on
}
DUPLICATE = CanonicalError.DUPLICATE_REQUEST_ID
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(request_id: int | str, tool: str, tag: str | None = None, *, stateless: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {} if tag is None else {"tag": tag}}
    if stateless:
        params["_meta"] = STATELESS_META
    return rpc(request_id, "tools/call", params)


def _text(reply: dict[str, Any]) -> str:
    return str(reply["result"]["content"][0]["text"])


def _assert_duplicate(reply: dict[str, Any], request_id: int | str) -> None:
    """The gateway's refusal of the second request: under its id, the id named in ``error.data``."""
    assert reply["id"] == request_id and reply["error"]["code"] == DUPLICATE.mcp_code, reply
    assert reply["error"]["data"]["reason"] == DUPLICATE.reason and reply["error"]["data"]["id"] == request_id


def _assert_clients_duplicate_and_nothing_unanswered(tmp_path: Path) -> None:
    """The report: the duplicate, once, against the client, and nothing else; no request ended
    without its answer (`unanswered`, ADR 12)."""
    report = report_of(tmp_path)
    assert report["violations_by_party"] == {DUPLICATE.slug: {"client": 1}}
    assert report["unanswered"] == []


def _duplicate_over_ndjson(
    gateway: Lines, *, prefix: str = "", stateless: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """gate(7, A) runs upstream; a second request 7 comes; release(9, A) lets the first end; the
    client's input ends. Exactly two frames under id 7 reach the client, to the end of the gateway's
    output: the answer to the second, at once, then the first's answer."""

    def call(request_id: int, tool: str, tag: str) -> dict[str, Any]:
        return _call(request_id, prefix + tool, tag, stateless=stateless)

    gateway.send(call(7, "gate", "A"), call(8, "arrived", "A"))
    assert _text(gateway.reply_to(8)) == "A"  # the first request 7 runs upstream
    gateway.send(call(7, "gate", "B"))
    seen = [gateway.reply_to(7)]
    gateway.send(call(9, "release", "A"))
    seen.append(gateway.reply_to(7))
    seen += [frame for frame in gateway.close() if frame.get("id") == 7]
    assert len(seen) == 2, seen
    return seen[0], seen[1]


def _handshake(gateway: Lines) -> None:
    gateway.send(initialize_frame(VERSION, 1))
    gateway.reply_to(1)
    gateway.send(INITIALIZED, rpc(2, "tools/list"))
    gateway.reply_to(2)


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_over_stdio_a_second_request_under_an_id_in_flight_is_refused_and_the_first_answered_once(
    tmp_path: Path, mode: str
) -> None:
    """JSON-RPC 2.0 §4 (a response carries its request's id), ADR 43: relayed, the second request 7
    would lose a reply (the client cannot tell them apart); it is refused (-32600, `data.id`), in
    observe mode too, and the first's result arrives once under 7; nothing is left unanswered."""
    gateway = Lines(tmp_path, "--mode", mode, "--", *PEER_UPSTREAM)
    _handshake(gateway)
    refused, answered = _duplicate_over_ndjson(gateway)
    _assert_duplicate(refused, 7)
    assert _text(answered) == "A"
    assert gateway.process.returncode == 0
    _assert_clients_duplicate_and_nothing_unanswered(tmp_path)


@pytest.mark.parametrize("front", ["stdio", "http"])
def test_an_ordinary_session_of_the_official_client_is_unchanged(tmp_path: Path, front: str) -> None:
    """ADR 43: the SDK client (it chooses its own ids, one per request) keeps calls in flight at
    once through the gateway, and every one is answered as it was before: nothing is refused."""

    async def session(target: StdioServerParameters | str) -> list[str]:
        async with Client(target, mode="legacy", read_timeout_seconds=WAIT) as client:
            gates = [asyncio.ensure_future(client.call_tool("gate", {"tag": tag})) for tag in ("S", "T")]
            for tag in ("S", "T"):
                assert (await client.call_tool("arrived", {"tag": tag})).content[0].text == tag  # type: ignore[union-attr]
                await client.call_tool("release", {"tag": tag})
            return [(await gate).content[0].text for gate in gates]  # type: ignore[union-attr]

    if front == "http":
        with http_gateway(tmp_path, upstream=PEER_UPSTREAM) as gateway:
            texts = asyncio.run(asyncio.wait_for(session(gateway.url), WAIT))
    else:
        command = gateway_command(upstream=PEER_UPSTREAM)
        env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
        parameters = StdioServerParameters(command=command[0], args=command[1:], env=env)
        texts = asyncio.run(asyncio.wait_for(session(parameters), WAIT))
    assert texts == ["S", "T"]
    report = report_of(tmp_path)
    assert report["violations"] == {} and report["unanswered"] == []


async def _session_headers(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """A raw HTTP session opened at ``VERSION``, its tools listed; the headers of its requests."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    opened = await client.post(url, json=rpc(0, "initialize", params), headers=HEADERS)
    headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": VERSION}
    await client.post(url, json=INITIALIZED, headers=headers)
    await client.post(url, json=rpc(1, "tools/list"), headers=headers)
    return headers


def _replies(response: httpx.Response, request_id: int | str) -> list[dict[str, Any]]:
    """The replies under ``request_id`` in a POST's response (JSON, or every event of a stream)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    else:
        frames = [response.json()]
    return [frame for frame in frames if "method" not in frame and frame.get("id") == request_id]


def test_over_http_a_second_request_under_an_id_in_flight_in_one_session_is_refused(tmp_path: Path) -> None:
    """ADR 43 on a Streamable HTTP session (2025-11-25): the second POST of id 7 is answered at once
    with the refusal (a JSON-RPC error: status 200, ADR 13); the first POST's stream gets its result
    once, under 7; the session ends with nothing unanswered."""

    async def exchange(url: str) -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(timeout=WAIT) as client:
            headers = await _session_headers(client, url)
            first = asyncio.ensure_future(client.post(url, json=_call(7, "gate", "A"), headers=headers))
            await client.post(url, json=_call(8, "arrived", "A"), headers=headers)
            refused = await client.post(url, json=_call(7, "gate", "B"), headers=headers)
            await client.post(url, json=_call(9, "release", "A"), headers=headers)
            answered = await asyncio.wait_for(first, WAIT)
            await client.delete(url, headers=headers)
            return refused, answered

    with http_gateway(tmp_path, upstream=PEER_UPSTREAM) as gateway:
        refused, answered = asyncio.run(asyncio.wait_for(exchange(gateway.url), WAIT))
    assert refused.status_code == 200
    _assert_duplicate(body_of(refused), 7)
    [result] = _replies(answered, 7)
    assert _text(result) == "A"
    _assert_clients_duplicate_and_nothing_unanswered(tmp_path)


def test_over_stateless_http_two_posts_under_one_id_are_two_exchanges_each_answered_under_it(tmp_path: Path) -> None:
    """ADR 7 and ADR 43: under 2026-07-28 there is no session: a request is known by the POST that
    carried it (an id another POST holds goes upstream renamed), so two POSTs of id 7 in flight at once
    are no duplicate: both run upstream, each POST gets its own result under 7, nothing is refused."""

    async def exchange(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=WAIT) as client:

            def post(frame: dict[str, Any]) -> Any:
                headers = {**STATELESS_HEADERS, "Mcp-Name": frame["params"]["name"]}
                return client.post(url, json=frame, headers=headers)

            calls = []
            for number, tag in enumerate(("A", "B"), 8):
                calls.append(asyncio.ensure_future(post(_call(7, "gate", tag, stateless=True))))
                await post(_call(number, "arrived", tag, stateless=True))  # both run upstream at once
            for number, tag in enumerate(("A", "B"), 10):
                await post(_call(number, "release", tag, stateless=True))
            return list(await asyncio.wait_for(asyncio.gather(*calls), WAIT))

    with http_gateway(tmp_path, upstream=PEER_UPSTREAM) as gateway:
        answers = asyncio.run(asyncio.wait_for(exchange(gateway.url), WAIT))
    assert [[_text(reply) for reply in _replies(answer, 7)] for answer in answers] == [["A"], ["B"]]
    assert report_of(tmp_path)["violations"] == {}


def test_over_http_a_request_under_the_id_of_the_gateways_own_tools_list_goes_up_renamed(tmp_path: Path) -> None:
    """ADR 43: a call of a tool not listed waits while the gateway lists the tools itself (issue 18,
    under an id of its own, `gateway-N`), and the upstream holds that list; the client's request
    under `gateway-N` meanwhile is no fault of the client's: it reaches the upstream under another
    id and its answer comes back under `gateway-N`; then the gateway's list completes and the
    waiting call is answered (a tool the list does not name)."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"check_wait_seconds": WAIT}))

    async def exchange(url: str) -> tuple[str, httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(timeout=WAIT) as client:
            headers = await _session_headers(client, url)
            await client.post(url, json=_call(2, "hold_lists"), headers=headers)  # and its list changed
            waiting = asyncio.ensure_future(client.post(url, json=_call(3, "unlisted"), headers=headers))
            own = _text(body_of(await client.post(url, json=_call(4, "listing"), headers=headers)))
            renamed = await client.post(url, json=_call(own, "release_lists"), headers=headers)
            return own, renamed, await asyncio.wait_for(waiting, WAIT)

    with http_gateway(tmp_path, "--config", str(config), upstream=PEER_UPSTREAM) as gateway:
        own, renamed, waited = asyncio.run(asyncio.wait_for(exchange(gateway.url), WAIT))
    assert own.startswith("gateway-")
    [answer] = _replies(renamed, own)
    assert _text(answer) != own  # the id the upstream saw: another
    refused = body_of(waited)
    assert refused["id"] == 3 and refused["error"]["code"] == CanonicalError.TOOL_NOT_FOUND.mcp_code
    report = report_of(tmp_path)
    assert report["violations"] == {"tool_not_found": 1} and report["unanswered"] == []


def test_an_aggregate_refuses_a_duplicate_and_renames_a_request_under_its_own_id_at_a_server(tmp_path: Path) -> None:
    """ADR 43 behind an aggregate (ADR 29): a duplicate is refused in front of it, the first answered
    once; a client's request under the id of the aggregate's own request waiting at a server (its
    list fetched again after `list_changed`, `aggregate-0-N`) goes to that server under another id
    (the aggregate's member ids follow the session's one rule) and comes back under its own."""
    config = write_config(tmp_path, {"peer": server(PEER_UPSTREAM)})
    gateway = Lines(tmp_path, "--config", str(config))
    _handshake(gateway)
    gateway.send(_call(3, "peer__hold_lists"))
    gateway.reply_to(3)
    gateway.send(_call(4, "peer__listing"))
    own = _text(gateway.reply_to(4))  # the aggregate asks its server for the changed list itself
    assert own.startswith("aggregate-0-")
    gateway.send(_call(own, "peer__release_lists"))
    assert _text(gateway.reply_to(own)) != own  # the server saw it under another id
    refused, answered = _duplicate_over_ndjson(gateway, prefix="peer__")
    _assert_duplicate(refused, 7)
    assert _text(answered) == "A"
    _assert_clients_duplicate_and_nothing_unanswered(tmp_path)


def test_a_bridged_stateless_client_over_stdio_gets_a_duplicate_refused_and_the_first_answered_once(
    tmp_path: Path,
) -> None:
    """ADR 43 through an era bridge (ADR 24, `--bridge 2025-11-25`): a 2026-07-28 client has no
    session, but over STDIO it is one client on one connection, so its ids in flight are one table:
    the second request 7 is refused before the bridge, the first answered once under 7."""
    gateway = Lines(tmp_path, "--bridge", "2025-11-25", "--", *PEER_UPSTREAM)
    refused, answered = _duplicate_over_ndjson(gateway, stateless=True)
    _assert_duplicate(refused, 7)
    assert _text(answered) == "A"
    _assert_clients_duplicate_and_nothing_unanswered(tmp_path)


def test_a_servers_second_request_under_an_id_in_flight_to_the_client_is_refused_to_it(tmp_path: Path) -> None:
    """ADR 43, the other way: the upstream asks the client `roots/list` twice under one id, the first
    not answered; the client sees the first only (the upstream gets the refusal of the second, its
    violation), the client's answer settles the first, and nothing is left unanswered."""
    hello = {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "scripted", "version": "1"}}
    ask = {"jsonrpc": "2.0", "id": "ask", "method": "roots/list"}
    pong = {"jsonrpc": "2.0", "id": 2, "result": {}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[1, [{"jsonrpc": "2.0", "id": 1, "result": hello}]], [2, [ask, ask, pong]]]))
    gateway = Lines(tmp_path, "--", *SCRIPTED, str(script))
    gateway.send(initialize_frame(VERSION, 1))
    gateway.reply_to(1)
    gateway.send(INITIALIZED, rpc(2, "ping"))
    asked = gateway.read()
    assert asked == ask
    gateway.reply_to(2)
    gateway.send({"jsonrpc": "2.0", "id": "ask", "result": {"roots": []}})
    assert [frame for frame in gateway.close() if frame.get("method")] == []
    report = report_of(tmp_path)
    assert report["violations_by_party"] == {DUPLICATE.slug: {"upstream": 1}}
    assert report["unanswered"] == []
