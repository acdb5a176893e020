"""A raw NDJSON MCP server that answers from a script: the upstream of the exactness oracle (issue 24).

``scripted_server.py SCRIPT``: SCRIPT is a JSON list of ``[id, [frame, ...]]``. When a request
arrives, the first unused entry of its id is written out, frame by frame (server requests,
notifications and the reply itself, valid or not: the gateway in front is what is tested); a
request with no entry gets an empty result. Notifications and responses are read and dropped.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        script = [(json.dumps(key), frames) for key, frames in json.load(handle)]
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue
        key = json.dumps(message["id"])
        entry = next((i for i, (k, _) in enumerate(script) if k == key), None)
        frames = script.pop(entry)[1] if entry is not None else [{"jsonrpc": "2.0", "id": message["id"], "result": {}}]
        for frame in frames:
            sys.stdout.write(json.dumps(frame) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
