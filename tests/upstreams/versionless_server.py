"""A raw NDJSON MCP server with exactly one fault: its ``initialize`` reply's ``serverInfo`` has no
``version`` (required by every bundled schema's ``Implementation``). Everything else is right.

It speaks 2025-11-25 only, and answers that to any offer (basic/lifecycle: a server that does not
support the requested version answers one it does). Its one tool is ``echo``; a request it does not
know (``server/discover``) gets -32601. Notifications and responses are read and dropped.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2025-11-25"
ECHO = {
    "name": "echo",
    "description": "Echo a string back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def result_of(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a request this server knows; ``None`` for any other."""
    if method == "initialize":
        info = {"name": "versionless"}  # the fault: no "version"
        return {"protocolVersion": VERSION, "capabilities": {"tools": {}}, "serverInfo": info}
    if method == "tools/list":
        return {"tools": [ECHO]}
    if method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "ping":
        return {}
    return None


def main() -> int:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue
        params = message.get("params")
        result = result_of(message["method"], params if isinstance(params, dict) else {})
        if result is None:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
