"""The costliest frames we could construct within the default limits, and what each costs (issue 41).

Each frame is judged on every path that reads one: the gateway's chain both ways (in process, the
verdict and its listing of violations), ``serve``'s ``validate_asset``, ``check`` on a one-line
capture and the library (``validate_message``); CPU seconds by ``time.process_time``, the median of
``--rounds`` (default 3), next to the same frame's ``orjson.loads`` (the floor any reader pays).
Then a real HTTP gateway in front of an SDK server: a second client's ``ping`` round trips while the
first client's worst frame is judged (medians, and the slowest). And the duplicate check's share of
the verdict path: the bench corpus through the chain with the reader as shipped, and with a reader
that keeps the last of a name given twice unseen, in turn (``--corpus``).
Usage: python bench/bench_worst_frames.py [--rounds N] [--corpus] [--json]
"""

from __future__ import annotations

import asyncio
import functools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from mcp_server.chain.compose import build_chain  # noqa: E402
from mcp_server.core import jsonio  # noqa: E402
from mcp_server.core.errors import Rejection  # noqa: E402
from mcp_server.core.session import Session  # noqa: E402
from mcp_server.core.types import Direction, Frame  # noqa: E402
from mcp_server.offline.check import check_capture  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry, ToolIO  # noqa: E402
from mcp_server.validation import validate_message  # noqa: E402

LIMIT = 1_048_576
VERSION = "2025-11-25"
ITEMS_SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["k"]}}},
}
BOUNDED_SCHEMA = {
    "type": "object",
    "properties": {"values": {"type": "array", "items": {"type": "number", "maximum": 100}}},
}


def call(arguments_json: bytes, request_id: int = 7, tool: str = "t") -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}' % (
        request_id,
        tool.encode(),
        arguments_json,
    )


def fill(unit: bytes, head: bytes, tail: bytes) -> bytes:
    """``head`` + as many ``unit``s, comma-separated, as fit the limit + ``tail``."""
    room = LIMIT - len(head) - len(tail) - 200
    count = room // (len(unit) + 1)
    return head + b",".join([unit] * count) + tail


def frames() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """name → (client frame, the tool's inputSchema)."""
    return {
        "every item misses a required key (349k errors)": (call(fill(b"{}", b'{"items":[', b"]}")), ITEMS_SCHEMA),
        "nested arrays, as many as fit": (call(fill(b"[[]]", b'{"items":[', b"]}")), ITEMS_SCHEMA),
        "every number on the schema's bound (exact path)": (
            call(fill(b"100.0", b'{"values":[', b"]}")),
            BOUNDED_SCHEMA,
        ),
        "the same, and one number past a double's precision": (
            call(fill(b"100.0", b'{"values":[100.00000000000000001,', b"]}")),
            BOUNDED_SCHEMA,
        ),
        "a name given twice at the end": (call(fill(b'{"k":1}', b'{"items":[', b'],"items":[]}')), ITEMS_SCHEMA),
        "nested past the reader, then wide": (call(b"[" * 300 + fill(b"1", b"", b"") + b"]" * 300), ITEMS_SCHEMA),
    }


class _Tools:
    """One tool, compiled: the ``ToolSchemas`` the chain reads."""

    strict = True

    def __init__(self, registry: SchemaRegistry, schema: dict[str, Any], output: dict[str, Any] | None = None) -> None:
        self.table = {
            "t": ToolIO(
                tool_id="t",
                input_schema=schema,
                output_schema=output,
                input=registry.compile(schema),
                output=None if output is None else registry.compile(output),
            )
        }

    def io(self, name: str) -> ToolIO | None:
        return self.table.get(name)


def cpu(work: Callable[[], Any], rounds: int) -> float:
    spent = []
    for _ in range(rounds):
        began = time.process_time()
        work()
        spent.append(time.process_time() - began)
    return statistics.median(spent)


def judged(registry: SchemaRegistry, direction: Direction, raw: bytes, schema: dict[str, Any], *, reply: bool) -> Any:
    """One frame through a session's chain (a reply: after the call it answers), its verdict."""
    tools = _Tools(registry, {"type": "object"}, schema) if reply else _Tools(registry, schema)
    chain = build_chain(registry, direction, tools=tools, max_frame_bytes=LIMIT * 2)
    session = Session()
    session.negotiate(VERSION)
    if reply:
        session.expect(Direction.CLIENT_TO_SERVER, 7, "tools/call", "t")
    try:
        return chain.check(Frame(raw=raw, transport="bench", session=session, direction=direction))
    except Rejection as rejection:
        return rejection


def as_reply(raw: bytes) -> bytes:
    """The call's arguments as a tool's structured result (the server→client direction)."""
    arguments = raw[raw.index(b'"arguments":') + 12 : -2]
    return b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":%s}}' % arguments


def paths(registry: SchemaRegistry, raw: bytes, schema: dict[str, Any], rounds: int, scratch: Path) -> dict[str, float]:
    capture = scratch / "one.ndjson"
    handshake = [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}',
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}',
    ]
    capture.write_bytes(b"\n".join([*handshake, raw]) + b"\n")
    asset = (
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"validate_asset","arguments":{"schema":"TextContent","asset":%s}}}'
        % raw[raw.index(b'"arguments":') + 12 : -2]
    )
    return {
        "orjson.loads": cpu(lambda: _safely(orjson.loads, raw), rounds),
        "gateway, client → server": cpu(
            lambda: judged(registry, Direction.CLIENT_TO_SERVER, raw, schema, reply=False), rounds
        ),
        "gateway, server → client": cpu(
            lambda: judged(registry, Direction.SERVER_TO_CLIENT, as_reply(raw), schema, reply=True), rounds
        ),
        "serve (validate_asset)": cpu(lambda: _serve_once(registry, asset), rounds),
        "check (one line)": cpu(lambda: check_capture(capture, registry=registry), rounds),
        "library (validate_message)": cpu(lambda: validate_message(raw, version=VERSION, registry=registry), rounds),
    }


def _safely(read: Callable[[bytes], Any], raw: bytes) -> Any:
    try:
        return read(raw)
    except ValueError:
        return None


def _serve_once(registry: SchemaRegistry, frame: bytes) -> Any:
    from mcp_server.core.settings import Settings
    from mcp_server.serve.app import build_server  # the server's own handler, as serve runs it
    from mcp_server.serve.tools import ToolSet
    from mcp_server.serve.tools.catalog import builtin_tools

    handler = _SERVE.get("handler")
    if handler is None:
        tools = ToolSet(builtin_tools({}, registry), registry)
        handler = _SERVE["handler"] = build_server(registry, tools, Settings(max_frame_bytes=LIMIT * 2))
    session = _serve_session()
    return asyncio.run(
        handler(Frame(raw=frame, transport="bench", session=session, direction=Direction.CLIENT_TO_SERVER))
    )


_SERVE: dict[str, Any] = {}


def _serve_session() -> Session:
    session = Session()
    session.negotiate(VERSION)
    session.initialized = True
    return session


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SDK_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "sdk_server.py")]


def _session(client: httpx.Client, url: str) -> dict[str, str]:
    opened = client.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}},
        },
        headers=HEADERS,
    )
    headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": VERSION}
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def second_client(raw: bytes, rounds: int) -> tuple[float, float, float]:
    """A real HTTP gateway before an SDK server: a second session's ``ping`` round trips (ms: alone,
    the median while the first session posts ``raw`` ``rounds`` times, and the slowest then)."""
    from bench_gateway_http import free_port, serve, stop

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with tempfile.TemporaryDirectory() as scratch:
        env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "MCP_RUNS_DIR": scratch}
        command = [sys.executable, "-m", "mcp_server", "gateway", "--listen", url, "--", *SDK_SERVER]
        process = serve(command, url, env)
        try:
            with httpx.Client(timeout=120) as one, httpx.Client(timeout=120) as two:
                first, second = _session(one, url), _session(two, url)
                alone, during = _pings(two, url, second, lambda: time.sleep(1.0)), []
                during = _pings(
                    two, url, second, lambda: [one.post(url, content=raw, headers=first) for _ in range(rounds)]
                )
        finally:
            stop(process)
    return statistics.median(alone), statistics.median(during), max(during)


def _pings(client: httpx.Client, url: str, headers: dict[str, str], meanwhile: Callable[[], Any]) -> list[float]:
    """Ping round trips (ms) on ``client``'s session, one after another, for as long as ``meanwhile`` runs."""
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    stop, times = threading.Event(), []

    def pinging() -> None:
        while not stop.is_set():
            began = time.perf_counter()
            client.post(url, content=ping, headers=headers)
            times.append((time.perf_counter() - began) * 1000)

    thread = threading.Thread(target=pinging)
    thread.start()
    try:
        meanwhile()
    finally:
        stop.set()
        thread.join()
    return times


def corpus_share(rounds: int) -> dict[str, Any]:
    """The verdict path over the bench corpus with the shipped reader and with one that keeps the
    last of a name given twice unseen, in turn; ratios to ``orjson.loads`` of the same frames."""
    import bench_spine
    import jiter
    from corpus import build

    shipped = jsonio.read
    unchecked = functools.partial(jiter.from_json, allow_inf_nan=False)
    frames_, tools = build()
    registry = SchemaRegistry()
    ratios: dict[str, list[float]] = {"shipped": [], "no duplicate check": []}
    for _ in range(rounds):
        for name, reader in (("shipped", shipped), ("no duplicate check", unchecked)):
            jsonio.read = reader
            floor, _ = bench_spine.run_orjson(frames_)
            rate, _ = bench_spine.run_chain(frames_, tools, registry)
            ratios[name].append(rate / floor)
    jsonio.read = shipped
    shares = [1 - s / u for s, u in zip(ratios["shipped"], ratios["no duplicate check"], strict=True)]
    return {
        "verdict path / orjson.loads": {k: statistics.median(v) for k, v in ratios.items()},
        "duplicate check's share (median, min, max)": (statistics.median(shares), min(shares), max(shares)),
    }


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    registry = SchemaRegistry()
    table: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, (raw, schema) in frames().items():
            table[name] = {"bytes": len(raw), **paths(registry, raw, schema, rounds, Path(scratch))}
    worst = frames()["every item misses a required key (349k errors)"][0]
    table["second client's ping (ms): alone, during, slowest"] = second_client(worst, rounds)
    if "--corpus" in sys.argv:
        table["duplicate check on the bench corpus"] = corpus_share(max(rounds, 5))
    if "--json" in sys.argv:
        print(json.dumps(table, indent=2))
        return
    for name, row in table.items():
        print(name)
        if isinstance(row, dict):
            for key, value in row.items():
                shown = f"{value * 1000:9.1f} ms" if isinstance(value, float) and key != "bytes" else value
                print(f"    {key:32} {shown}")
        else:
            print(f"    {row}")


if __name__ == "__main__":
    main()
