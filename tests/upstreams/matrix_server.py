"""A FastMCP server of our own (the official SDK's `MCPServer`) for the real-world matrix (issue 29):
structured output, resources and prompts, results of any size, progress, cancellation, and the
requests a server makes of its client (sampling, elicitation, roots) and its list changes.

`matrix_server.py` serves STDIO; `matrix_server.py http PORT` Streamable HTTP at /mcp.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

server = MCPServer("matrix-upstream")


class Sum(BaseModel):
    total: int


class Answer(BaseModel):
    name: str


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers (structured output: the tool declares an outputSchema)."""
    return Sum(total=a + b)


@server.tool()
def blob(kilobytes: int) -> str:
    """A text result of ``kilobytes`` KB (a large frame: 700 KB, 3 MB)."""
    line = "0123456789abcdef" * 63 + "\n"  # 1,009 bytes
    return (line * (kilobytes * 1024 // len(line) + 1))[: kilobytes * 1024]


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, then finish."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def count_slowly(seconds: float, ctx: Context) -> str:
    """Report progress once, then wait (a call for the client to cancel once it started)."""
    await ctx.report_progress(1, 2, "started")
    await anyio.sleep(seconds)
    return "done"


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling/createMessage)."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=question))
    result = await ctx.session.create_message(messages=[message], max_tokens=20)
    content = result.content
    return content.text if isinstance(content, TextContent) else "?"


@server.tool()
async def ask_user(ctx: Context) -> str:
    """Ask the client's user (elicitation/create)."""
    answer = await ctx.elicit("Your name?", schema=Answer)
    return f"{answer.action}:{answer.data.name if answer.action == 'accept' and answer.data else ''}"


@server.tool()
async def roots(ctx: Context) -> list[str]:
    """The client's roots (roots/list)."""
    return [str(root.uri) for root in (await ctx.session.list_roots()).roots]


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool and say the list changed (notifications/tools/list_changed)."""
    server.add_tool(lambda: "new", name="grown", description="A tool added at run time.")
    await ctx.notify_tools_changed()
    return "grown"


@server.resource("text://hello", mime_type="text/plain")
def hello() -> str:
    """A static text resource."""
    return "hello"


@server.resource("text://people/{name}", mime_type="text/plain")
def person(name: str) -> str:
    """A resource template."""
    return f"person {name}"


@server.prompt()
def greet(name: str) -> str:
    """A prompt with one argument."""
    return f"Greet {name} warmly."


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["http"]:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
