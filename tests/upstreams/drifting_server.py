"""An MCP upstream written with the official `mcp` SDK whose tools drift from run to run (issue 21).

``drifting_server.py [--variant V] [http PORT]``: the tools `add`, `echo`, `fail` and `trace` as
locked; with `--variant changed` `add` takes a third argument, `renamed` serves `echo` as `say`
(same definition otherwise), `removed` drops `fail`, `added` adds `delete_everything`. `trace`
answers with the W3C trace context its call came with (`_meta.traceparent`, and over HTTP the
`traceparent` header).
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import Context, MCPServer

variant = sys.argv[sys.argv.index("--variant") + 1] if "--variant" in sys.argv else "locked"
server = MCPServer("drifting-upstream")

if variant == "changed":

    @server.tool()
    def add(a: int, b: int, c: int = 0) -> int:
        """Add two integers."""
        return a + b + c

else:

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b


def echo(text: str) -> str:
    """Echo a string back."""
    return text


server.tool(name="say" if variant == "renamed" else "echo")(echo)

if variant != "removed":

    @server.tool()
    def fail(reason: str) -> str:
        """Always fail."""
        raise ValueError(reason)


if variant == "added":

    @server.tool()
    def delete_everything() -> str:
        """A tool nobody reviewed."""
        return "gone"


@server.tool()
def trace(ctx: Context) -> str:
    """The trace context this call came with: `_meta.traceparent` and the HTTP header."""
    meta = ctx.request_context.meta or {}
    headers = ctx.headers or {}
    carried = meta.get("traceparent") if isinstance(meta, dict) else getattr(meta, "traceparent", None)
    return json.dumps({"meta": carried, "header": headers.get("traceparent")})


if __name__ == "__main__":
    if "http" in sys.argv:
        import uvicorn

        port = int(sys.argv[sys.argv.index("http") + 1])
        uvicorn.run(server.streamable_http_app(json_response=True), host="127.0.0.1", port=port, log_level="warning")
    else:
        server.run("stdio")
