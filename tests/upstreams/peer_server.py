"""An MCP server written with the official `mcp` SDK for the hostile-peer tests (issue 30), over STDIO.

`gate(tag)` runs until `release(tag)` comes (from any client of the same upstream), then logs and
reports progress and answers `tag`; `arrived(tag)` answers once `gate(tag)` runs, so a test waits on
that event, never on time. `chatter(size)` sends log messages of `size` bytes without end: a
chatty upstream for a client that stopped reading.

`hold_lists()` says its tool list changed and holds every `tools/list` after it until
`release_lists()`; `listing()` answers, once one is held, the id that `tools/list` came under (a
request a gateway makes of its own); `release_lists()` answers the id it came under itself.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ListToolsResult, PaginatedRequestParams

warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging: deprecated at 2026-07-28, still served


class _HeldLists(MCPServer):
    """The SDK's server, whose `tools/list` waits while its lists are held (`hold_lists`)."""

    held: asyncio.Event | None = None  # set: the lists go again
    listed: asyncio.Queue[str]

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        if self.held is not None:
            released = self.held
            await self.listed.put(str(ctx.request_id))
            await released.wait()
        return await super()._handle_list_tools(ctx, params)


server = _HeldLists("peer-upstream")
_running: dict[str, asyncio.Event] = {}
_released: dict[str, asyncio.Event] = {}


def _event(table: dict[str, asyncio.Event], tag: str) -> asyncio.Event:
    return table.setdefault(tag, asyncio.Event())


@server.tool()
async def gate(tag: str, ctx: Context) -> str:
    """Wait for `release(tag)`, then log `<tag> log`, report progress, and answer `tag`."""
    _event(_running, tag).set()
    await _event(_released, tag).wait()
    await ctx.info(f"{tag} log")
    await ctx.report_progress(1, 1, f"{tag} progress")
    return tag


@server.tool()
async def arrived(tag: str) -> str:
    """Answer once `gate(tag)` runs."""
    await _event(_running, tag).wait()
    return tag


@server.tool()
async def release(tag: str) -> str:
    """Let `gate(tag)` finish."""
    _event(_released, tag).set()
    return tag


@server.tool()
async def hold_lists(ctx: Context) -> str:
    """Hold every `tools/list` from now on, and say the tool list changed (the next one is asked)."""
    server.held, server.listed = asyncio.Event(), asyncio.Queue()
    await ctx.session.send_tool_list_changed()
    return "held"


@server.tool()
async def listing() -> str:
    """Answer, once a `tools/list` is held, the id it came under."""
    return await server.listed.get()


@server.tool()
async def release_lists(ctx: Context) -> str:
    """Let the held `tools/list` go; answer the id this request came under."""
    if server.held is not None:
        server.held.set()
        server.held = None
    return ctx.request_id


@server.tool()
async def chatter(size: int, ctx: Context) -> str:
    """Send log messages of `size` bytes while it runs, without end."""
    text = "x" * size
    while True:
        await ctx.info(text)


if __name__ == "__main__":
    server.run("stdio")
