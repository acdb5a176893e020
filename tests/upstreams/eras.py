"""One protocol era for an SDK upstream: `legacy` (the `initialize` handshake, 2025-11-25 and earlier)
or `modern` (the 2026-07-28 per-request envelope), over STDIO or Streamable HTTP.

Only the SDK's own serving loops and refusals are used; this adds no protocol behaviour of its own.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from mcp.server.lowlevel.server import Server
from mcp.server.runner import _initialize_after_modern_data, _serve_modern_stream, serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, MCP_PROTOCOL_VERSION_HEADER
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Era = Literal["legacy", "modern"]
ERAS: tuple[Era, ...] = ("legacy", "modern")


async def serve_stdio(server: Server[Any], era: Era) -> None:
    """Serve one STDIO connection in ``era`` only (`Server.run` serves both, the first request choosing)."""
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        if era == "legacy":
            # The handshake-only loop: an enveloped request before `initialize` meets its init gate,
            # an unknown method (`server/discover` included) METHOD_NOT_FOUND.
            options = server.create_initialization_options()
            await serve_loop(server, read_stream, write_stream, lifespan_state=state, init_options=options)
        else:
            # The loop `Server.run` enters for a connection opened by an enveloped request: it
            # answers `initialize` with UNSUPPORTED_PROTOCOL_VERSION naming the modern versions.
            await _serve_modern_stream(server, read_stream, write_stream, lifespan_state=state, raise_exceptions=False)


def http_app(app: ASGIApp, era: Era) -> ASGIApp:
    """``app`` (the SDK's Streamable HTTP app, both eras) narrowed to ``era``.

    The SDK routes a POST by its `MCP-Protocol-Version` header: a handshake version (or none) to its
    session transport, any other to its per-request entry. Legacy-only has no per-request entry, so
    such a request reaches the session transport without the header, which refuses it as it refuses
    any request outside a session. Modern-only has no handshake: `initialize` gets the SDK's
    UNSUPPORTED_PROTOCOL_VERSION rejection, at the HTTP status the SDK gives that code.
    """
    header = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")

    async def narrowed(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        version = next((v.decode("latin-1") for k, v in scope["headers"] if k == header), None)
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            if era == "modern":
                await _refuse_initialize(app, scope, receive, send)
                return
        elif era == "legacy":
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != header]}
        await app(scope, receive, send)

    return narrowed


async def _refuse_initialize(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer `initialize` as a server with no handshake does; pass anything else on unread."""
    messages: list[Message] = []
    while not messages or messages[-1].get("more_body", False):
        messages.append(await receive())
    body = b"".join(message.get("body", b"") for message in messages)
    try:
        request: Any = json.loads(body)
    except ValueError:
        request = None
    if not isinstance(request, dict) or request.get("method") != "initialize":
        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await app(scope, replayed, send)
        return
    # The refusal the SDK's modern loop gives `initialize` (its STDIO counterpart, `serve_stdio`).
    data = _initialize_after_modern_data(request.get("params"))
    error = {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "this server serves no initialize handshake",
        "data": data,
    }
    reply = {"jsonrpc": "2.0", "id": request.get("id"), "error": error}
    await JSONResponse(reply, status_code=ERROR_CODE_HTTP_STATUS[UNSUPPORTED_PROTOCOL_VERSION])(scope, receive, send)
