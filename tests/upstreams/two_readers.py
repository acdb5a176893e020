"""What a first-wins and a last-wins parser make of every frame that reaches a server (issue 41).

``two_readers.py LOG``: a raw NDJSON MCP server (the handshake versions) with three tools: ``echo``
(any arguments, answered as text), ``pay`` (``amount``: an integer of at most 100) and ``reply``
(answers with its ``raw`` argument written verbatim as the result: a server's hostile frame);
``TWO_READERS_TOOLS``, when set, is the list of tools written verbatim in place of these.
``two_readers.py LOG -- COMMAND...``: a tap in front of COMMAND instead, copying lines both ways.

Each line the gateway delivers is read twice, by Python's parser keeping the first of a name given
twice and by the same parser keeping the last, both with exact decimals; where the two readings
differ, ``divergent`` and the line are appended to LOG. A ``pay`` call whose exact amount breaks its
schema is appended as ``bypass``: what was judged is not what the server read.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from decimal import Decimal
from typing import IO, Any

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object"}},
    {
        "name": "pay",
        "inputSchema": {
            "type": "object",
            "properties": {"amount": {"type": "integer", "maximum": 100}},
            "required": ["amount"],
        },
    },
    {"name": "reply", "inputSchema": {"type": "object", "properties": {"raw": {"type": "string"}}}},
]

log_path = sys.argv[1]
lock = threading.Lock()


def note(kind: str, line: bytes) -> None:
    with lock, open(log_path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"kind": kind, "line": line.decode("utf-8", "replace")[:2000]}) + "\n")


def _first(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in pairs:
        kept.setdefault(key, value)
    return kept


def readings(line: bytes) -> tuple[Any, Any] | None:
    """The line as a first-wins and as a last-wins parser read it (``None``: neither reads it)."""
    try:
        first = json.loads(line, object_pairs_hook=_first, parse_float=Decimal)
        last = json.loads(line, parse_float=Decimal)
    except (ValueError, RecursionError):
        return None
    return first, last


def inspect(line: bytes) -> Any:
    """Record what the two readers disagree on, and a ``pay`` whose exact amount its schema refuses."""
    read = readings(line)
    if read is None:
        return None
    first, last = read
    if repr(first) != repr(last):
        note("divergent", line)
    if isinstance(last, dict) and last.get("method") == "tools/call":
        params = last.get("params") or {}
        if params.get("name") == "pay":
            amount = (params.get("arguments") or {}).get("amount")
            whole = (isinstance(amount, int) and not isinstance(amount, bool)) or (
                isinstance(amount, Decimal) and amount == amount.to_integral_value()
            )
            if not whole or amount > 100:
                note("bypass", line)
    return last


def answer(message: dict[str, Any]) -> bytes | None:
    method, request_id = message.get("method"), message.get("id")
    if not isinstance(method, str) or "id" not in message:
        return None
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    result: Any = {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        result = {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "two-readers", "version": "1"},
        }
    elif method == "tools/list":
        listed = os.environ.get("TWO_READERS_TOOLS")  # a list of tools written verbatim, hostile or not
        if listed is not None:
            return (
                f'{json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]},"result":{{"tools":{listed}}}}}'.encode()
                + b"\n"
            )
        result = {"tools": TOOLS}
    elif method == "tools/call":
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        if params.get("name") == "reply" and isinstance(arguments.get("raw"), str):
            head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
            return f'{head},"result":{arguments["raw"]}}}'.encode() + b"\n"
        text = json.dumps(arguments, default=str)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method != "ping":
        error = {"code": -32601, "message": "Method not found"}
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, default=str).encode() + b"\n"


def serve() -> int:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = inspect(line)
        reply = answer(message) if isinstance(message, dict) else None
        if reply is not None:
            out.write(reply)
            out.flush()
    return 0


def tap(command: list[str]) -> int:
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def copy(source: IO[bytes], sink: IO[bytes], checked: bool) -> None:
        for line in iter(source.readline, b""):
            if checked:
                inspect(line)
            sink.write(line)
            sink.flush()
        sink.close()

    upstream = threading.Thread(target=copy, args=(child.stdout, sys.stdout.buffer, False), daemon=True)
    upstream.start()
    with contextlib.suppress(BrokenPipeError):
        copy(sys.stdin.buffer, child.stdin, True)
    upstream.join()
    return child.wait()


if __name__ == "__main__":
    sys.setrecursionlimit(5000)  # a frame the gateway delivers nests at most 200 levels; a tap reads deeper
    sys.exit(tap(sys.argv[sys.argv.index("--") + 1 :]) if "--" in sys.argv else serve())
