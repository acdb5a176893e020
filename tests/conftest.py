"""Shared fixtures: one registry per run, a serve handler, and raw-frame helpers."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from mcp_server import jsonio
from mcp_server.registry import SchemaRegistry
from mcp_server.server import build_server
from mcp_server.settings import Settings
from mcp_server.tools import ToolSet
from mcp_server.types import Frame, Handler, Session

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def registry() -> SchemaRegistry:
    return SchemaRegistry()


@pytest.fixture(scope="session")
def tools(registry: SchemaRegistry) -> ToolSet:
    from mcp_server.tools.catalog import builtin_tools

    return ToolSet(builtin_tools({}, registry), registry)


@pytest.fixture(scope="session")
def handler(registry: SchemaRegistry, tools: ToolSet) -> Handler:
    return build_server(registry, tools, Settings())


def exchange(handler: Handler, frames: Iterable[bytes | dict[str, Any]], session: Session | None = None) -> list[Any]:
    """Feed frames through ``handler`` in order; the parsed replies (``None`` for no reply)."""
    session = session or Session()

    async def run() -> list[Any]:
        replies = []
        for frame in frames:
            raw = frame if isinstance(frame, bytes) else jsonio.dumps(frame)
            reply = await handler(Frame(raw=raw, transport="test", session=session))
            replies.append(None if reply is None else jsonio.loads(reply.to_bytes()))
        return replies

    return asyncio.run(run())


def initialize_frame(version: str, request_id: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    }


def meta_2026(**params: Any) -> dict[str, Any]:
    """Params carrying the 2026-07-28 per-request envelope."""
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        **params,
    }


def server_command() -> list[str]:
    return [sys.executable, "-m", "mcp_server", "serve"]


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "SYN_"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["MCP_READY_FILE"] = str(tmp_path / "mcp.ready")
    env.update(extra)
    return env
