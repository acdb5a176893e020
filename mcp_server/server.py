"""The `serve` application: lifecycle routes, the tool routes and the chain in front of them.

Transport-free: every transport hands frames to the handler built here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from . import __version__, jsonio
from .chain import build_chain
from .errors import CanonicalError, Rejection
from .events import EventLog
from .lifecycle import discover, initialize, initialized, ping
from .registry import SchemaRegistry
from .router import Route, Router
from .settings import Settings
from .tools import Tool, ToolContext, ToolSet
from .types import Frame, Handler

__all__ = ["build_server", "call_tool_result"]


def call_tool_result(output: Mapping[str, Any], registry: SchemaRegistry, version: str) -> dict[str, Any]:
    """A tool's result object as a ``CallToolResult``: structured, as text, ``isError`` = not ok."""
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": jsonio.dumps(output).decode()}],
        "isError": output.get("ok", True) is not True,
    }
    if "structuredContent" in registry.protocol(version).definitions["CallToolResult"].get("properties", {}):
        result["structuredContent"] = dict(output)
    return result


def build_server(
    registry: SchemaRegistry, tools: ToolSet, settings: Settings, *, events: EventLog | None = None
) -> Handler:
    async def list_tools(frame: Frame) -> dict[str, Any]:
        assert frame.version is not None
        return {"tools": tools.definitions(registry.protocol(frame.version))}

    async def call_tool(frame: Frame) -> dict[str, Any]:
        assert frame.version is not None and frame.message is not None
        params = frame.message.params or {}
        tool = tools.get(params.get("name", ""))
        if tool is None:
            raise Rejection(CanonicalError.TOOL_NOT_FOUND, [{"path": "/params/name", "msg": "tool_not_found"}])
        output = await tool.run(params.get("arguments", {}), ToolContext(registry=registry, version=frame.version))
        return call_tool_result(output, registry, frame.version)

    async def run_direct(tool: Tool, frame: Frame) -> dict[str, Any]:
        assert frame.message is not None
        return await tool.run(frame.message.params or {}, ToolContext(registry=registry, version=frame.version))

    async def cancelled(frame: Frame) -> None:
        return None  # requests run to completion in order; nothing is left to cancel

    routes: dict[str, Route] = {
        "initialize": partial(initialize, version_string=__version__),
        "notifications/initialized": initialized,
        "notifications/cancelled": cancelled,
        "ping": ping,
        "server/discover": partial(discover, registry=registry),
        "tools/list": list_tools,
        "tools/call": call_tool,
    }
    for tool in tools:
        routes[tool.name] = partial(run_direct, tool)
    return build_chain(
        Router(routes, registry),
        registry=registry,
        tools=tools,
        max_frame_bytes=settings.max_frame_bytes,
        events=events,
    )
