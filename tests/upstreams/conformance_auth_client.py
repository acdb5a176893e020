"""The client the conformance suite's authorization scenarios run (`conformance client --command`):
the official SDK client over STDIO with `mcp-server gateway --upstream URL`, so that the gateway is
the OAuth client under test. A scenario's pre-registered client (`MCP_CONFORMANCE_CONTEXT`) becomes
the gateway configuration's `oauth` table; the user's browser is `browser.py`.

Usage: `conformance_auth_client.py URL`: initialize, list the tools, call each; exit 0 when done.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
import sys
import tempfile
from pathlib import Path

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(folder: Path, env: dict[str, str]) -> list[str]:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if "client_id" not in context:
        return []
    lines = ["[oauth]", f"client_id = {json.dumps(context['client_id'])}", f"redirect_port = {_free_port()}"]
    if context.get("client_secret"):
        env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        lines.append('client_secret = "${CONFORMANCE_CLIENT_SECRET}"')
    config = folder / "gateway.toml"
    config.write_text("\n".join(lines) + "\n")
    return ["--config", str(config)]


async def main(url: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "MCP_OAUTH_DIR": str(Path(folder) / "oauth"),
            "MCP_RUNS_DIR": str(Path(folder) / "runs"),
            "MCP_READY_FILE": str(Path(folder) / "ready"),
            "BROWSER": shlex.join([sys.executable, str(HERE / "browser.py")]),
        }
        options = _config(Path(folder), env)
        args = ["-m", "mcp_server", "gateway", "--upstream", url, *options]
        parameters = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with Client(parameters, mode="legacy", read_timeout_seconds=30) as client:
            for tool in (await client.list_tools()).tools:
                await client.call_tool(tool.name, {})


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1]), 60))
