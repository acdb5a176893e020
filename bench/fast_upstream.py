"""A minimal, fast MCP upstream for benchmarks: raw NDJSON, N tools with distinct schemas.

Answers initialize, tools/list and tools/call at once, so the gateway's own cost is what shows.
With ``--modern`` it speaks 2026-07-28 only: ``server/discover`` instead of ``initialize``, and
every result states its ``resultType`` (and a list its cache hints).
Usage: python bench/fast_upstream.py [N_TOOLS] [--modern]
"""

from __future__ import annotations

import json
import sys


def tool(index: int) -> dict:
    return {
        "name": f"tool_{index}",
        "description": f"benchmark tool {index}",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": 100_000 + index},
                "count": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["text"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"length": {"type": "integer"}, "echo": {"type": "string"}},
            "required": ["length"],
        },
    }


def result_of(request: dict, tools: list[dict]) -> dict:
    """The result the fast upstream answers ``request`` with, serving ``tools``."""
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fast", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": tools}
    if method == "tools/call":
        text = request["params"]["arguments"].get("text", "")
        structured = {"length": len(text), "echo": text[:64]}
        return {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}
    return {}


def modern_result_of(request: dict, tools: list[dict]) -> dict:
    """The 2026-07-28 result of ``request``: no handshake, ``resultType`` on every result."""
    if request.get("method") == "server/discover":
        return {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fast", "version": "1"}},
        }
    result = {**result_of(request, tools), "resultType": "complete"}
    if request.get("method") == "tools/list":
        result.update(ttlMs=0, cacheScope="public")
    return result


def main() -> None:
    arguments = [a for a in sys.argv[1:] if a != "--modern"]
    answer = modern_result_of if "--modern" in sys.argv[1:] else result_of
    tools = [tool(i) for i in range(int(arguments[0]) if arguments else 20)]
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        rid = request.get("id")
        if rid is None:
            continue
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": answer(request, tools)}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
