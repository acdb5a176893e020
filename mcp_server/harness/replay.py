"""Replay a script of raw frames against a running server over STDIO, a Unix socket or HTTP.

A client, not a transport: it reads the frames it sends (to set the HTTP headers a real client
would) and pairs every frame with the reply it earned (``None`` when none came). On the NDJSON
transports a ``ping`` with a reserved id follows each frame; the replies before its answer are
that frame's, so a frame that earns no reply is told from a slow one without waiting on a timer.

Script format (JSON Lines), one frame per line:
``{"send": <JSON value>}`` a frame written compactly; ``{"raw": "<text>"}`` exact UTF-8 bytes
(invalid JSON, say); ``{"oversized": N}`` an N-byte object frame, for the size guard. A capture
serves as a script too: a line that is a JSON-RPC frame is sent as written, and
``{"direction": ..., "frame": ...}`` lines send the client's frames (the server's are skipped).
A first line ``{"upstream": [ARG, ...], "args": [OPTION, ...]}`` names the server a gateway fronts
for this script and options for the server or gateway (``{python}`` stands for the running
interpreter, ``{script_dir}`` for the script's folder).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..chain.routing_headers import NAME_BEARING_METHODS
from ..core import jsonio
from ..registry.versions import PROTOCOL_VERSION_META

__all__ = [
    "ReplayError",
    "Replayed",
    "load_script",
    "replay_http",
    "replay_ndjson",
    "replay_socket",
    "script_args",
    "script_upstream",
]

_SYNC_PREFIX = "replay-sync-"
_TIMEOUT = 30.0


class ReplayError(Exception):
    """A script that cannot be read, or a server that stopped answering."""


@dataclass(frozen=True, slots=True)
class Replayed:
    """One frame's outcome: the JSON-RPC reply (``None``: no reply) and, over HTTP, the status."""

    reply: Any
    status: int | None = None


def _frame_of(entry: Any, line: str) -> bytes | None:
    """The bytes to send for one line (``None``: a frame the server sent, not sent again)."""
    if not isinstance(entry, dict):
        return None
    if "send" in entry:
        return jsonio.dumps(entry["send"])
    if isinstance(entry.get("raw"), str):
        return str(entry["raw"]).encode()
    size = entry.get("oversized")
    if isinstance(size, int) and size >= 8:
        return b'{"x":"' + b"x" * (size - 8) + b'"}'
    if "jsonrpc" in entry:  # a plain capture: the frame exactly as the client wrote it
        return line.strip().encode()
    if "frame" in entry and entry.get("direction") in ("client_to_server", "server_to_client"):
        if entry["direction"] == "server_to_client":
            return b""
        frame = entry["frame"]
        return frame.encode() if isinstance(frame, str) else jsonio.dumps(frame)
    return None


def load_script(path: Path) -> list[bytes]:
    """The frames of a script file, or ``ReplayError`` naming the line that is wrong.

    Besides the script's own entries, a line may be a frame as the client wrote it (a plain NDJSON
    capture) or ``{"direction", "frame"}`` (a wrapped capture: only the client's frames are sent)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"cannot read {path}: {exc}") from None
    frames = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = jsonio.loads(line)
        except jsonio.JSONSyntaxError:
            raise ReplayError(f"{path}:{number}: not JSON") from None
        if number == 1 and isinstance(entry, dict) and ("upstream" in entry or "args" in entry):
            continue  # the header: see script_upstream
        frame = _frame_of(entry, line)
        if frame is None:
            raise ReplayError(
                f"{path}: line {number}: expected {{'send': ...}}, {{'raw': str}}, {{'oversized': int >= 8}}, "
                "a JSON-RPC frame or {'direction', 'frame'}"
            )
        if frame:
            frames.append(frame)
    return frames


def _header(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as lines:
            first = lines.readline()
        header = jsonio.loads(first) if first.strip() else None
    except (OSError, UnicodeDecodeError, jsonio.JSONSyntaxError):
        return {}  # load_script reports what is wrong with the file
    return header if isinstance(header, dict) and ("upstream" in header or "args" in header) else {}


def _arguments(path: Path, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise ReplayError(f"{path}:1: {key!r} must be a non-empty list of strings")
    here = str(path.resolve().parent)
    return [a.replace("{python}", sys.executable).replace("{script_dir}", here) for a in value]


def script_upstream(path: Path) -> list[str] | None:
    """The upstream command a script's header names (``None``: the script is for ``serve``)."""
    header = _header(path)
    return _arguments(path, "upstream", header["upstream"]) if "upstream" in header else None


def script_args(path: Path) -> list[str]:
    """Options a script's header gives the server or gateway (``"args": ["--policy", ...]``)."""
    header = _header(path)
    return _arguments(path, "args", header["args"]) if "args" in header else []


def _sync_frame(index: int) -> bytes:
    return jsonio.dumps({"jsonrpc": "2.0", "id": f"{_SYNC_PREFIX}{index}", "method": "ping"})


async def replay_ndjson(
    frames: Sequence[bytes], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> list[Replayed]:
    """Each frame, then a sync ping; what came back before the ping's answer is the frame's reply."""
    results: list[Replayed] = []
    for index, frame in enumerate(frames):
        writer.write(frame + b"\n" + _sync_frame(index) + b"\n")
        await writer.drain()
        replies: list[Any] = []
        while True:
            line = await asyncio.wait_for(reader.readline(), _TIMEOUT)
            if not line:
                raise ReplayError(f"the server closed the stream after frame {index}")
            document = jsonio.loads(line)
            if isinstance(document, dict) and document.get("id") == f"{_SYNC_PREFIX}{index}":
                break
            replies.append(document)
        if len(replies) > 1:
            raise ReplayError(f"frame {index} earned {len(replies)} replies")
        results.append(Replayed(replies[0] if replies else None))
    return results


async def replay_socket(frames: Sequence[bytes], path: Path) -> list[Replayed]:
    reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 24)
    try:
        return await replay_ndjson(frames, reader, writer)
    finally:
        writer.close()


def _client_headers(frame: bytes, negotiated: str | None, session_id: str | None) -> dict[str, str]:
    """The headers a real Streamable HTTP client sends with ``frame``."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    if negotiated is not None:
        headers["MCP-Protocol-Version"] = negotiated
    try:
        document = jsonio.loads(frame)
    except jsonio.JSONSyntaxError:
        return headers
    if not isinstance(document, dict) or not isinstance(document.get("params"), Mapping):
        return headers
    params = document["params"]
    meta = params.get("_meta")
    if isinstance(meta, Mapping) and isinstance(meta.get(PROTOCOL_VERSION_META), str):
        headers["MCP-Protocol-Version"] = meta[PROTOCOL_VERSION_META]
        if isinstance(document.get("method"), str):
            headers["Mcp-Method"] = document["method"]
            member = NAME_BEARING_METHODS.get(document["method"])
            if member is not None and isinstance(params.get(member), str):
                headers["Mcp-Name"] = params[member]
    return headers


async def replay_http(frames: Sequence[bytes], url: str) -> list[Replayed]:
    """Each frame as one POST, with the session id and version headers a client would keep."""
    results: list[Replayed] = []
    session_id: str | None = None
    negotiated: str | None = None
    async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
        for frame in frames:
            response = await client.post(url, content=frame, headers=_client_headers(frame, negotiated, session_id))
            reply = jsonio.loads(response.content) if response.content else None
            if response.headers.get("mcp-session-id"):
                session_id = response.headers["mcp-session-id"]
                result = reply.get("result") if isinstance(reply, dict) else None
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    negotiated = result["protocolVersion"]
            results.append(Replayed(reply, response.status_code))
    return results
