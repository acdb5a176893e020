"""A raw NDJSON MCP server that answers from a script: the upstream of the exactness oracle (issue 24).

``scripted_server.py SCRIPT``: SCRIPT is a JSON list of ``[id, [frame, ...]]`` (or ``{"script":
that list, "tools": [tool, ...]}``). When a request arrives, the first unused entry of its id is
written out, frame by frame (server requests, notifications and the reply itself, valid or not: the
gateway in front is what is tested); a request with no entry gets an empty result, or for
``tools/list`` (the gateway asking for the tools it checks calls against) a valid list of the
script's ``tools`` (none by default). Notifications and responses are read and dropped.
"""

from __future__ import annotations

import json
import sys

STATELESS_LIST = {"tools": [], "resultType": "complete", "cacheScope": "public", "ttlMs": 0}


def unscripted(request: dict, tools: list) -> dict:
    """The answer to a request the script has no entry for."""
    result: dict = {}
    if request.get("method") == "tools/list":
        meta = (request.get("params") or {}).get("_meta") or {}
        stateless = meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
        result = {**(STATELESS_LIST if stateless else {}), "tools": tools}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        document = json.load(handle)
    entries, tools = (document["script"], document["tools"]) if isinstance(document, dict) else (document, [])
    script = [(json.dumps(key), frames) for key, frames in entries]
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue
        key = json.dumps(message["id"])
        entry = next((i for i, (k, _) in enumerate(script) if k == key), None)
        frames = script.pop(entry)[1] if entry is not None else [unscripted(message, tools)]
        for frame in frames:
            sys.stdout.write(json.dumps(frame) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
