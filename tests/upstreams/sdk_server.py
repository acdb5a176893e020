"""A well-behaved MCP server written with the official `mcp` SDK (MCPServer), over STDIO or HTTP.

The gateway tests put it behind `mcp-server gateway`; it must be indistinguishable through it.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("sdk-upstream")


class Sum(BaseModel):
    total: int


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers; the result is structured (the tool declares an outputSchema)."""
    return Sum(total=a + b)


@server.tool()
def echo(text: str) -> str:
    """Echo a string back."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fail: a tool execution error (isError: true)."""
    raise ValueError(reason)


def main() -> None:
    import os
    import sys

    if sys.argv[1:2] == ["http"]:  # `http PORT [json]`: Streamable HTTP at /mcp (SSE replies unless json)
        import uvicorn

        app = server.streamable_http_app(json_response=sys.argv[3:4] == ["json"])
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
        # Done at the end of its input: exit at once, as a small server does (the interpreter's
        # teardown, 0.3 s of CPU, outlasts the gateway's wait for its upstream on a loaded machine).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
