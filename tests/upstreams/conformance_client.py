"""The client the conformance suite's client scenarios run (`conformance client --command`): the
official SDK client, straight to the suite's server over Streamable HTTP (`--direct`), or over
STDIO through `mcp-server gateway --upstream URL`, so that a scenario's result through the gateway
can be held to its result direct.

On an elicitation it accepts with each field's default (SEP-1034: a client applies the defaults of
the requested schema). It lists the tools and calls each, with a plain value for each required
argument. Usage: `conformance_client.py [--direct] URL`; exit 0 when done.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

PLAIN = {"string": "x", "number": 1, "integer": 1, "boolean": True}
"""A value of each primitive JSON type, for a tool's required arguments."""


async def _with_defaults(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    properties = getattr(params, "requested_schema", {}).get("properties", {})
    content = {name: field["default"] for name, field in properties.items() if "default" in field}
    return types.ElicitResult(action="accept", content=content)


def _arguments(tool: types.Tool) -> dict[str, Any]:
    properties = tool.input_schema.get("properties", {})
    required = tool.input_schema.get("required", [])
    return {name: PLAIN.get(properties.get(name, {}).get("type"), "x") for name in required}


async def _session(server: StdioServerParameters | str) -> None:
    async with Client(server, mode="legacy", read_timeout_seconds=30, elicitation_callback=_with_defaults) as client:
        for tool in (await client.list_tools()).tools:
            await client.call_tool(tool.name, _arguments(tool))


async def main(url: str, direct: bool) -> None:
    if direct:
        await _session(url)
        return
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "MCP_RUNS_DIR": str(Path(folder) / "runs"), "MCP_READY_FILE": str(Path(folder) / "ready")}
        args = ["-m", "mcp_server", "gateway", "--upstream", url]
        await _session(StdioServerParameters(command=sys.executable, args=args, env=env))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[-1], "--direct" in sys.argv[1:-1]), 60))
