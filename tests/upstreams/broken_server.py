"""A deliberately broken MCP upstream: a raw NDJSON script, no SDK.

It answers `initialize` correctly, then misbehaves per tool called:
`bad_result` (a result that is not a CallToolResult), `wrong_structured` (structuredContent that
fails the outputSchema), `unknown_id` (answers with an id never sent), `junk` (prints a stray line
to stdout first), `die` (exits mid-call), `hang` (never answers; a `notifications/cancelled` for
it is reported on stderr). The second `tools/list` changes a tool's schema, and
the tool `badschema` has an inputSchema that is not a valid JSON Schema. Started with `--stubborn`
it ignores SIGTERM and outlives the end of its input: only SIGKILL stops it.
"""

from __future__ import annotations

import json
import signal
import sys
import threading

listed = 0
if "--stubborn" in sys.argv[1:]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def tools(version: int) -> list[dict]:
    number = {"type": "integer"} if version == 1 else {"type": "string"}
    return [
        {"name": "bad_result", "inputSchema": {"type": "object"}},
        {
            "name": "wrong_structured",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"n": number}, "required": ["n"]},
        },
        {"name": "unknown_id", "inputSchema": {"type": "object"}},
        {"name": "junk", "inputSchema": {"type": "object"}},
        {"name": "die", "inputSchema": {"type": "object"}},
        {"name": "hang", "inputSchema": {"type": "object"}},
        {
            "name": "strict",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        },
        {"name": "badschema", "inputSchema": {"type": "object", "properties": {"n": {"type": "nonsense"}}}},
    ]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    if method == "notifications/cancelled":
        sys.stderr.write(f"cancelled {json.dumps(request['params'])} (started with {' '.join(sys.argv[1:])})\n")
        sys.stderr.flush()
    if rid is None:
        continue
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": request["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "broken", "version": "0"},
                },
            }
        )
    elif method == "tools/list":
        listed += 1
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools(listed)}})
    elif method == "tools/call":
        name = request["params"]["name"]
        if name == "bad_result":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": "not a list"}})
        elif name == "wrong_structured":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "structuredContent": {"n": "seven"}}})
        elif name == "unknown_id":
            send({"jsonrpc": "2.0", "id": 424242, "result": {"content": []}})
        elif name == "junk":
            sys.stdout.write("DEBUG: this print() should have gone to stderr\n")
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
        elif name == "die":
            sys.exit(3)
        elif name == "hang":
            pass
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

if "--stubborn" in sys.argv[1:]:
    threading.Event().wait()  # input ended: stay anyway
