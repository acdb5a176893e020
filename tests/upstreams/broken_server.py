"""A deliberately broken MCP upstream: a raw NDJSON script, no SDK.

It answers `initialize` correctly, then misbehaves per tool called:
`bad_result` (a result that is not a CallToolResult), `wrong_structured` (structuredContent that
fails the outputSchema), `unknown_id` (answers with an id never sent), `junk` (prints a stray line
to stdout first), `die` (exits mid-call), `hang` (never answers; it says so on stderr, and a
`notifications/cancelled` for it is reported there too), `deferred` (answered only once the next
frame has been read), `late` (answered only once its call is cancelled). The second `tools/list`
changes a tool's schema, and the tool `badschema` has an inputSchema that is not a valid JSON Schema.
Started with `--pages`, `tools/list` answers three tools a page (`nextCursor`); with `--mute-list`
it never answers `tools/list`.
Started with `--stubborn` it ignores SIGTERM and outlives the end of its input: only SIGKILL stops it.
"""

from __future__ import annotations

import json
import signal
import sys
import threading

listed = 0
if "--stubborn" in sys.argv[1:]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
deferred: list[dict] = []  # replies held until the next frame is read
late: set = set()  # ids of `late` calls, answered when cancelled
PAGE = 3


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
        {"name": "deferred", "inputSchema": {"type": "object"}},
        {"name": "late", "inputSchema": {"type": "object"}},
        {
            "name": "strict",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        },
        {"name": "badschema", "inputSchema": {"type": "object", "properties": {"n": {"type": "nonsense"}}}},
    ]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def page(version: int, cursor: str | None) -> dict:
    everything = tools(version)
    if "--pages" not in sys.argv:
        return {"tools": everything}
    start = int(cursor or 0)
    result: dict = {"tools": everything[start : start + PAGE]}
    if start + PAGE < len(everything):
        result["nextCursor"] = str(start + PAGE)
    return result


for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    while deferred:
        send(deferred.pop(0))
    if method == "notifications/cancelled":
        sys.stderr.write(f"cancelled {json.dumps(request['params'])} (started with {' '.join(sys.argv[1:])})\n")
        sys.stderr.flush()
        cancelled = request["params"].get("requestId")
        if cancelled in late:  # answers all the same: a reply that crosses the cancellation
            late.discard(cancelled)
            send({"jsonrpc": "2.0", "id": cancelled, "result": {"content": [{"type": "text", "text": "late"}]}})
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
        if "--mute-list" in sys.argv:
            continue
        cursor = (request.get("params") or {}).get("cursor")
        if cursor is None:
            listed += 1
        send({"jsonrpc": "2.0", "id": rid, "result": page(listed, cursor)})
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
            sys.stderr.write(f"hanging {json.dumps(rid)}\n")
            sys.stderr.flush()
        elif name == "deferred":
            deferred.append(
                {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "deferred"}]}}
            )
        elif name == "late":
            late.add(rid)
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

if "--stubborn" in sys.argv[1:]:
    threading.Event().wait()  # input ended: stay anyway
