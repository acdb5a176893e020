"""A FastMCP server of our own (the official SDK's `MCPServer`) for the aggregate's tests (issue 33):
structured output, progress, a call to cancel, the requests a server makes of its client (sampling,
elicitation, roots), a list change, resources and a template, a prompt, completions, and a log.

`fleet_server.py [--name NAME] [--tools N] [--hold FILE] [--speaks VERSION]` serves STDIO (`--tools N`:
N more tools, `tool_0` …, for the benchmark's big lists; `--hold FILE`: it starts answering only once
FILE is gone; `--speaks VERSION`: it negotiates only that version);
`fleet_server.py http PORT` serves Streamable HTTP at /mcp.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

parser = argparse.ArgumentParser()
parser.add_argument("mode", nargs="?", default="stdio", choices=["stdio", "http"])
parser.add_argument("port", nargs="?", type=int, default=0)
parser.add_argument("--name", default="fleet")
parser.add_argument("--tools", type=int, default=0)
parser.add_argument("--hold", metavar="FILE", help="answer nothing while FILE exists (a server slow to start)")
parser.add_argument("--speaks", metavar="VERSION", help="negotiate only this handshake version (an older server)")
OPTIONS = parser.parse_args()
if OPTIONS.speaks:  # the SDK's own negotiation (mcp.server.runner), held to one version
    import mcp.server.runner

    mcp.server.runner.HANDSHAKE_PROTOCOL_VERSIONS = (OPTIONS.speaks,)
    mcp.server.runner.LATEST_HANDSHAKE_VERSION = OPTIONS.speaks

server = MCPServer(OPTIONS.name, instructions=f"{OPTIONS.name} adds, counts and asks.")


class Sum(BaseModel):
    total: int


class Answer(BaseModel):
    name: str


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers (structured output: the tool declares an outputSchema)."""
    return Sum(total=a + b)


@server.tool()
def echo(text: str) -> str:
    """Echo a string back."""
    return text


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
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))
    result = await ctx.session.create_message(messages=[message], max_tokens=20, related_request_id=ctx.request_id)
    content = result.content
    return content.text if isinstance(content, types.TextContent) else "?"


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
    await ctx.session.send_tool_list_changed()  # (``ctx.notify_tools_changed`` tells 2026-07-28 listeners only)
    return "grown"


@server.tool()
async def log(ctx: Context) -> str:
    """Send one log message (notifications/message)."""
    await ctx.info("fleet log")
    return "logged"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one header of the HTTP request that carried the call ("" over STDIO, or none)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.resource("fleet://hello", mime_type="text/plain")
def hello() -> str:
    """A static text resource."""
    return f"hello from {OPTIONS.name}"


@server.resource("fleet://people/{name}", mime_type="text/plain")
def person(name: str) -> str:
    """A resource template."""
    return f"person {name}"


@server.prompt()
def greet(name: str) -> str:
    """A prompt with one argument."""
    return f"Greet {name} warmly."


@server.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    values = [value for value in ("ada", "alan", "grace") if value.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


def _numbered(number: int) -> None:
    def tool(value: int) -> int:
        return value + number

    server.add_tool(tool, name=f"tool_{number}", description=f"Adds {number} to its argument.")


for _number in range(OPTIONS.tools):
    _numbered(_number)


if __name__ == "__main__":
    while OPTIONS.hold and Path(OPTIONS.hold).exists():
        time.sleep(0.02)
    if OPTIONS.mode == "http":
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=OPTIONS.port, log_level="warning")
    else:
        server.run("stdio")
