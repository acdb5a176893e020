"""An MCP server written with the official `mcp` SDK for the hostile-peer tests (issue 30), over STDIO.

`gate(tag)` runs until `release(tag)` comes (from any client of the same upstream), then logs and
reports progress and answers `tag`; `arrived(tag)` answers once `gate(tag)` runs, so a test waits on
that event, never on time. `chatter(size)` sends log messages of `size` bytes without end: a
chatty upstream for a client that stopped reading.
"""

from __future__ import annotations

import asyncio
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging: deprecated at 2026-07-28, still served

server = MCPServer("peer-upstream")
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
async def chatter(size: int, ctx: Context) -> str:
    """Send log messages of `size` bytes while it runs, without end."""
    text = "x" * size
    while True:
        await ctx.info(text)


if __name__ == "__main__":
    server.run("stdio")
