"""How the transports cut frames: a frame carries a size of its own only when its bytes were not kept
(issue 19: every other frame is the compiled fast path's to decide)."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_server.chain.compose import build_chain
from mcp_server.core import jsonio
from mcp_server.core.oversize import HEAD_BYTES, TAIL_BYTES, excerpt, recover
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, Frame
from mcp_server.registry.schemas import SchemaRegistry
from mcp_server.transport.http import read_body
from mcp_server.transport.ndjson import LineSplitter

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def _initialized() -> Session:
    session = Session()
    session.negotiate("2025-11-25")
    return session


def test_a_line_within_the_limit_is_all_in_its_bytes_and_the_fast_path_decides_it(registry: SchemaRegistry) -> None:
    """Issue 19: the fast path doubts a frame with a size of its own (its bytes were drained), so a
    line kept whole must carry none, or every frame would take the diagnostic path."""
    splitter = LineSplitter(1024)
    lines = splitter.feed(PING + b"\r\n" + PING[:10]) + splitter.feed(PING[10:] + b"\n")
    assert lines == [(PING, None), (PING, None)]
    chain = build_chain(registry, CLIENT_TO_SERVER)
    session = _initialized()
    for raw, size in lines:
        verdict = chain.fast(Frame(raw=raw, transport="stdio", session=session, size=size))
        assert verdict is not None and verdict.method == "ping"


def test_a_line_over_the_limit_is_drained_and_comes_out_as_its_head_and_tail_with_its_size() -> None:
    """Issue 18: an over-long line is never held; the size guard refuses it by the size it had, and
    (issue 29) reads the request's id from its head and tail, all that is kept of it."""
    splitter = LineSplitter(8)
    assert splitter.feed(b"x" * 5) == []
    assert splitter.feed(b"y" * 20 + b"\n" + b"ok\n") == [(b"x" * 5 + b"y" * 20, 25), (b"ok", None)]
    assert splitter.feed(b"z" * 9) == [] and splitter.close() == [(b"z" * 9, 9)]
    head, middle, tail = b"h" * HEAD_BYTES, b"m" * 3 * TAIL_BYTES, b"t" * TAIL_BYTES
    long_line = head + middle + tail
    lines = [line for at in range(0, len(long_line), 1000) for line in splitter.feed(long_line[at : at + 1000])]
    assert lines + splitter.feed(b"\r\n") == [(head + tail, len(long_line))]


def test_the_id_of_a_frame_over_the_limit_is_read_from_its_head_or_its_tail() -> None:
    """Issue 29: the request's id is recovered without parsing the whole frame, wherever an SDK puts it."""
    padding = {"text": '\\"{[' * 100_000}
    first = jsonio.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": padding})
    last = jsonio.dumps({"method": "tools/call", "params": padding, "jsonrpc": "2.0", "id": 'a"b'})
    reply = jsonio.dumps({"jsonrpc": "2.0", "id": 3, "result": padding})
    notification = jsonio.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": padding})
    assert recover(excerpt(first), len(first))[1:] == (7, "tools/call")
    assert recover(excerpt(last), len(last))[1:] == ('a"b', "tools/call")
    assert recover(excerpt(reply), len(reply)) == (frozenset({"jsonrpc", "id", "result"}), 3, None)
    assert "id" not in recover(excerpt(notification), len(notification)).members
    assert recover(b"not json at all", 10**6) == (frozenset(), None, None)


def _body(chunks: list[bytes]) -> Any:
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    return receive


def test_an_http_body_within_the_limit_has_no_size_of_its_own_and_one_over_it_is_not_kept() -> None:
    """Issue 19 (fast path) and issue 4 (a body over the limit is never held whole)."""
    whole = asyncio.run(read_body(_body([PING[:7], PING[7:]]), {}, 1024))
    assert whole == (PING, None)
    over = asyncio.run(read_body(_body([PING, PING]), {}, len(PING) + 1))
    assert over == (PING + PING, 2 * len(PING))  # its head only: all of it, this short
    declared = asyncio.run(read_body(_body([PING]), {"content-length": "5000"}, 1024))
    assert declared == (b"", 5000)  # refused before its body is sent
