"""The HTTP-backed tools of a catalogue (``--tools``) as ``serve`` tools, beside the built-in ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...execution.gate import Trace
from ...execution.http_tools import HttpTool, HttpToolExecutor
from . import Tool, ToolContext, ToolFunction

__all__ = ["catalogue_tools"]


def catalogue_tools(executor: HttpToolExecutor) -> list[Tool]:
    """The catalogue's tools as `serve` tools, listed and called beside the built-in ones."""

    def runner(tool: HttpTool) -> ToolFunction:
        async def run(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
            return await executor.execute(tool, arguments, context.trace or Trace(session_id=""))

        return run

    return [
        Tool(
            name=tool.name,
            title=tool.name,
            description=tool.description,
            run=runner(tool),
            approval=tool.approval,
            timeout_seconds=tool.timeout_seconds,
        )
        for tool in executor.by_id.values()
    ]
