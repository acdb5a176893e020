"""The server's own tools: what `serve` lists in ``tools/list`` and runs for ``tools/call``.

A tool is a name, a description and a function from validated arguments to a result object: a
plain function when it computes, an ``async`` one when it waits (I/O, a peer); its input and
output schemas live in ``schemas/tools/`` and compile through the registry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from inspect import iscoroutinefunction
from types import MappingProxyType
from typing import Any

from ...execution.gate import Elicit, Trace
from ...registry.schemas import ProtocolSchema, SchemaRegistry, ToolIO

__all__ = ["Tool", "ToolContext", "ToolFunction", "ToolSet"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a running tool may know about the call: the registry and the version in force."""

    registry: SchemaRegistry
    version: str | None
    trace: Trace | None = None
    elicit: Elicit | None = None  # set when the client declared elicitation and can be asked


ToolFunction = Callable[[Mapping[str, Any], ToolContext], dict[str, Any] | Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str
    title: str
    description: str
    run: ToolFunction
    approval: bool = False  # held for a human's approval even when the policy does not say so
    timeout_seconds: float | None = None  # tighter than the policy's timeout for this tool
    waits: bool = field(init=False)  # ``run`` is a coroutine function: only such a tool can time out

    def __post_init__(self) -> None:
        object.__setattr__(self, "waits", iscoroutinefunction(self.run))


class ToolSet:
    """The tools one server offers, with their I/O validators compiled at start-up."""

    strict = True  # a server knows every tool it has

    def __init__(self, tools: Iterable[Tool], registry: SchemaRegistry, io: Mapping[str, ToolIO] | None = None) -> None:
        """``io`` holds the validators of tools whose schemas are not bundled (HTTP-backed tools)."""
        declared = io or {}
        self._tools: Mapping[str, Tool] = MappingProxyType({tool.name: tool for tool in tools})
        self._io: Mapping[str, ToolIO] = MappingProxyType(
            {name: declared[name] if name in declared else registry.load_tool_io(name) for name in self._tools}
        )

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def table(self) -> Mapping[str, ToolIO]:
        return self._io

    def io(self, name: str) -> ToolIO | None:
        return self._io.get(name)

    def definitions(self, protocol: ProtocolSchema) -> list[dict[str, Any]]:
        """``tools/list`` entries, carrying only the fields the version's ``Tool`` defines."""
        known = protocol.definitions["Tool"].get("properties", {})
        listed = []
        for tool in self._tools.values():
            tool_io = self._io[tool.name]
            entry: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool_io.input_schema,
            }
            if "title" in known:
                entry["title"] = tool.title
            if "outputSchema" in known and tool_io.output_schema is not None:
                entry["outputSchema"] = tool_io.output_schema
            listed.append(entry)
        return listed
