"""A realistic, seeded MCP session at protocol 2025-11-25, as raw frames with their direction.

initialize + result, notifications/initialized, tools/list with 20 tools, many tools/call with
50 B to 20 KB arguments and results, progress notifications, and about 5 % invalid frames.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from mcp_server.registry.schemas import SchemaRegistry, ToolIO

VERSION = "2025-11-25"


@dataclass(frozen=True)
class BenchFrame:
    raw: bytes
    client: bool  # sent by the client (else by the server)
    method: str | None  # the method, or for a response the method it answers
    request_id: int | str | None
    valid: bool


def tool_definition(index: int) -> dict:
    return {
        "name": f"tool_{index}",
        "title": f"Tool {index}",
        "description": "A benchmark tool with a realistic schema " * 2,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                "mode": {"enum": ["fast", "exact", "fuzzy"]},
                "filters": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"field": {"type": "string"}, "op": {"enum": ["eq", "lt", "gt"]}, "value": {}},
                        "required": ["field", "op"],
                    },
                },
                "payload": {"type": "string"},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "score": {"type": "number"},
                            "text": {"type": "string"},
                        },
                        "required": ["id"],
                    },
                },
            },
            "required": ["count", "items"],
        },
    }


def build(n_calls: int = 4000, seed: int = 7) -> tuple[list[BenchFrame], list[dict]]:
    rng = random.Random(seed)
    tools = [tool_definition(i) for i in range(20)]
    frames: list[BenchFrame] = []

    def add(
        document: dict | bytes, client: bool, method: str | None, rid: int | str | None, valid: bool = True
    ) -> None:
        raw = document if isinstance(document, bytes) else json.dumps(document, separators=(",", ":")).encode()
        frames.append(BenchFrame(raw, client, method, rid, valid))

    add(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        },
        True,
        "initialize",
        0,
    )
    add(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-server", "version": "1"},
            },
        },
        False,
        "initialize",
        0,
    )
    add({"jsonrpc": "2.0", "method": "notifications/initialized"}, True, "notifications/initialized", None)
    add({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, True, "tools/list", 1)
    add({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}, False, "tools/list", 1)
    for index in range(n_calls):
        rid = 10 + index
        name = f"tool_{rng.randrange(20)}"
        size = int(50 * (400 ** rng.random()))  # 50 B to 20 KB, log-uniform
        arguments = {
            "query": "q" * rng.randint(1, 20),
            "limit": rng.randint(1, 1000),
            "mode": "fast",
            "filters": [{"field": "f", "op": "eq", "value": 1}],
            "payload": "x" * size,
        }
        invalid = rng.random() < 0.05
        if invalid:
            kind = rng.randrange(4)
            if kind == 0:
                add(
                    b'{"jsonrpc":"2.0","id":' + str(rid).encode() + b',"method":"tools/call","params":{',
                    True,
                    None,
                    rid,
                    False,
                )
            elif kind == 1:
                add(
                    {"jsonrpc": "1.0", "id": rid, "method": "tools/call", "params": {"name": name}},
                    True,
                    None,
                    rid,
                    False,
                )
            elif kind == 2:
                add(
                    {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"arguments": arguments}},
                    True,
                    "tools/call",
                    rid,
                    False,
                )
            else:
                bad = dict(arguments, limit="many")
                add(
                    {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": bad}},
                    True,
                    "tools/call",
                    rid,
                    False,
                )
            continue
        add(
            {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
            True,
            "tools/call",
            rid,
        )
        if rng.random() < 0.3:
            add(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": rid, "progress": 0.5, "total": 1.0},
                },
                False,
                "notifications/progress",
                None,
            )
        items = [
            {"id": f"i{k}", "score": rng.random(), "text": "t" * rng.randint(10, max(11, size // 10))}
            for k in range(rng.randint(1, 8))
        ]
        structured = {"count": len(items), "items": items}
        add(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "content": [{"type": "text", "text": json.dumps(structured)}],
                    "structuredContent": structured,
                    "isError": False,
                },
            },
            False,
            "tools/call",
            rid,
        )
    return frames, tools


class CorpusTools:
    """The corpus's tools, compiled: the ``ToolSchemas`` a gateway would have learnt from its list."""

    strict = False

    def __init__(self, registry: SchemaRegistry, tools: list[dict]) -> None:
        self._io = {
            t["name"]: ToolIO(
                tool_id=t["name"],
                input_schema=t["inputSchema"],
                output_schema=t["outputSchema"],
                input=registry.compile(t["inputSchema"]),
                output=registry.compile(t["outputSchema"]),
            )
            for t in tools
        }

    @property
    def table(self) -> dict[str, ToolIO]:
        return self._io

    def io(self, name: str) -> ToolIO | None:
        return self._io.get(name)
