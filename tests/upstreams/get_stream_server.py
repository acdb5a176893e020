"""An MCP server over Streamable HTTP (the `mcp` SDK) that talks on the session's GET stream.

Its tools send what belongs to no request there: a notification (`announce`), an elicitation
request (`ask`), and a notification sent while the stream is down (`drop_then_announce`: the
server closes the stream, which it may at any time, and keeps the event for a client that resumes
with `Last-Event-ID`). Events are kept in memory, with ids, so streams can be resumed.

Usage: `get_stream_server.py PORT`, serving at http://127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

server = MCPServer("get-stream-upstream")


class MemoryEvents(EventStore):
    """Every event of every stream, in order; ids are their positions."""

    def __init__(self) -> None:
        self.events: list[tuple[str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        self.events.append((stream_id, message))
        return str(len(self.events))

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        if not last_event_id.isdigit() or not 0 < int(last_event_id) <= len(self.events):
            return None
        stream_id = self.events[int(last_event_id) - 1][0]
        for number, (stream, message) in enumerate(self.events[int(last_event_id) :], int(last_event_id) + 1):
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, str(number)))
        return stream_id


async def _updated(ctx: Context, uri: str) -> None:
    """`notifications/resources/updated` naming no request: the server sends it on the GET stream."""
    await ctx.session.send_resource_updated(uri)


@server.tool()
async def announce(uri: str, ctx: Context) -> str:
    """Tell the client, on the GET stream, that ``uri`` changed."""
    await _updated(ctx, uri)
    return "announced"


@server.tool()
async def drop_then_announce(uri: str, ctx: Context) -> str:
    """Close the GET stream, then tell the client that ``uri`` changed (it gets it when it resumes)."""
    await ctx.close_standalone_sse_stream()
    await _updated(ctx, uri)
    return "dropped"


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the user on the GET stream (an elicitation that names no request); the answer comes back."""
    schema: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"}}}
    result = await ctx.session.elicit_form(question, schema)  # type: ignore[arg-type]
    return f"{result.action}: {(result.content or {}).get('answer')}"


if __name__ == "__main__":
    import uvicorn

    app = server.streamable_http_app(event_store=MemoryEvents())
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
