"""HTTP statuses by protocol version, as the official `mcp` SDK client meets them (issue 18, ADR 0013).

Up to 2025-11-25 a JSON-RPC response to a POSTed request, error or not, travels with 200; 2026-07-28
gives method-not-found 404 (and its three named errors 400). Each test drives one session of the
SDK client over Streamable HTTP at one version, against `mcp-server serve --http` and against the
gateway's HTTP front, and records the status of every POST.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from ..gateway.clients import sdk_session
from ..gateway.gateways import SDK_UPSTREAM, http_gateway
from ..servers import serving

WAIT = 30.0
HANDSHAKE_VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]  # 2024-11-05 has no Streamable HTTP
STATELESS = "2026-07-28"


class UnknownRequest(types.Request[types.RequestParams | None, str]):
    """A request for a method no MCP version defines."""

    method: str = "tools/unknown"
    params: types.RequestParams | None = None


# What each server offers: a call with invalid input, a valid call, a method it does not implement.
SERVE_CALLS = {
    "bad": ("validate_asset", {"schema": "TextContent"}),  # `asset` is required by the tool's inputSchema
    "good": ("validate_asset", {"asset": {"type": "text", "text": "hi"}, "schema": "TextContent"}),
}
UPSTREAM_CALLS = {"bad": ("add", {"a": "one", "b": 2}), "good": ("echo", {"text": "hi"})}


async def _bad_input_then_unknown_method(
    url: str, version: str, calls: dict[str, tuple[str, dict[str, Any]]], *, relayed: bool = False
) -> dict[str, Any]:
    """Invalid tool input, a valid call, an unknown method, a valid call (and with ``relayed``, a method
    the upstream behind a gateway does not implement): what the client saw of each, and the statuses."""
    statuses: list[tuple[str, int]] = []
    seen: dict[str, Any] = {}
    async with sdk_session(url, version, statuses) as session:
        await session.list_tools()  # the tools' schemas, as a client learns them
        bad_name, bad_arguments = calls["bad"]
        try:
            bad = await session.call_tool(bad_name, bad_arguments)
            seen["bad"] = ("result", bad.is_error)
        except MCPError as error:
            seen["bad"] = ("error", error.error.code)
        good_name, good_arguments = calls["good"]
        seen["after_bad"] = (await session.call_tool(good_name, good_arguments)).is_error
        seen["unknown"] = await _error_code_of(session.send_request(UnknownRequest(), types.EmptyResult))
        seen["after_unknown"] = (await session.call_tool(good_name, good_arguments)).is_error
        if relayed:  # `completion/complete` is the schema's; the upstream answers -32601 of its own
            reference = types.PromptReference(type="ref/prompt", name="none")
            seen["relayed"] = await _error_code_of(session.complete(reference, {"name": "a", "value": ""}))
    seen["statuses"] = sorted({(method, status) for method, status in statuses if method != "tools/list"})
    return seen


async def _error_code_of(request: Coroutine[Any, Any, Any]) -> int | None:
    """The JSON-RPC error code the client raises for ``request`` (``None`` when it succeeds)."""
    try:
        await request
    except MCPError as error:
        return error.error.code
    return None


def _expected(version: str, *, relayed: bool = False) -> dict[str, Any]:
    """ADR 0013: every response to a request is 200 up to 2025-11-25; 2026-07-28 answers an unknown
    method 404. Invalid tool input is a tool result from 2025-11-25 (tools, "Error Handling"), -32602 before."""
    stateless = version == STATELESS
    not_found = CanonicalError.METHOD_NOT_FOUND
    invalid_input = CanonicalError.INVALID_TOOL_INPUT
    seen: dict[str, Any] = {
        "bad": ("result", True) if version in ("2025-11-25", STATELESS) else ("error", invalid_input.mcp_code),
        "after_bad": False,
        "unknown": not_found.mcp_code,
        "after_unknown": False,
    }
    statuses = {("tools/call", 200), ("tools/unknown", not_found.http_status if stateless else 200)}
    if relayed:
        seen["relayed"] = not_found.mcp_code
        statuses.add(("completion/complete", not_found.http_status if stateless else 200))
    if stateless:
        statuses.add(("server/discover", 200))
    else:
        statuses |= {("initialize", 200), ("notifications/initialized", 202)}
    seen["statuses"] = sorted(statuses)
    return seen


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("http-status"), ["--http", "127.0.0.1:0"]) as running:
        yield running.address


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, STATELESS])
def test_the_official_client_keeps_its_serve_session_after_bad_input_and_an_unknown_method(
    serve_url: str, version: str
) -> None:
    """Issue 18, spec transports "Sending Messages to the Server" (2025-03-26 … 2025-11-25) and
    2026-07-28 "Protocol Version Header": each version's statuses, and the session goes on."""
    seen = asyncio.run(asyncio.wait_for(_bad_input_then_unknown_method(serve_url, version, SERVE_CALLS), WAIT))
    assert seen == _expected(version)


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, STATELESS])
def test_the_official_client_keeps_its_gateway_session_after_bad_input_and_an_unknown_method(
    tmp_path: Path, version: str
) -> None:
    """Issue 18: the gateway's HTTP front answers by the same rules as `serve --http`, and relays the
    upstream's own replies by the rules of the client's version."""
    with http_gateway(tmp_path, upstream=SDK_UPSTREAM) as gateway:
        calling = _bad_input_then_unknown_method(gateway.url, version, UPSTREAM_CALLS, relayed=True)
        seen = asyncio.run(asyncio.wait_for(calling, WAIT))
    assert seen == _expected(version, relayed=True)


META_CASES = {
    "no _meta": {},
    "no protocol version": {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
    "no client capabilities": {"_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS}},
    "capabilities not an object": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS, "io.modelcontextprotocol/clientCapabilities": 1}
    },
}
META_VALID = {"io.modelcontextprotocol/protocolVersion": STATELESS, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.mark.parametrize("front", ["serve", "gateway"])
def test_a_2026_request_without_its_meta_envelope_is_invalid_params_with_400(
    serve_url: str, tmp_path: Path, front: str
) -> None:
    """2026-07-28 (conformance `server-stateless`, "Rejections of requests missing required _meta
    fields use HTTP 400"): -32602 and 400, by serve and by the gateway's front alike; a valid one 200."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "tools/list",
    }

    def statuses(url: str) -> dict[str, tuple[int, int | None]]:
        seen = {}
        for name, params in {**META_CASES, "valid": {"_meta": {**META_VALID}}}.items():
            frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
            response = httpx2.post(url, json=frame, headers=headers, timeout=WAIT)
            body = response.json()
            seen[name] = (response.status_code, body.get("error", {}).get("code"))
        return seen

    if front == "serve":
        seen = statuses(serve_url)
    else:
        with http_gateway(tmp_path, upstream=SDK_UPSTREAM) as gateway:
            seen = statuses(gateway.url)
    invalid = CanonicalError.INVALID_REQUEST_META
    assert seen == {**{name: (invalid.http_status, invalid.mcp_code) for name in META_CASES}, "valid": (200, None)}
