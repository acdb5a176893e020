"""The bounded queues toward a peer (issue 30 row 5): a response stream closes past its bound, the
bridge's outbox makes its producer wait. In-memory, no I/O."""

from __future__ import annotations

import asyncio

from mcp_server.core.types import Reply
from mcp_server.transport.outbox import Outbox
from mcp_server.transport.streamable import Stream


def test_a_stream_past_its_bound_is_closed_its_messages_dropped_and_its_connection_cut() -> None:
    """Issue 30 row 5: a stream holds at most its bound for a client that does not read; past it the
    stream is closed (the slot is free again), what it held is dropped, the connection aborted."""

    async def run() -> tuple[bool, bool, int, list[object]]:
        cut: list[bool] = []
        stream = Stream(limit=100)
        stream.abort = lambda: cut.append(True)
        stream.put(Reply(raw=b"x" * 60))
        stream.put(Reply(raw=b"y" * 60))  # 120 > 100: the client is that far behind
        stream.put(Reply(raw=b"z" * 10))  # nothing more is taken
        items = []
        while not stream.queue.empty():
            items.append(stream.taken(stream.queue.get_nowait()))
        return stream.closed, bool(cut), stream.held, items

    closed, cut, held, items = asyncio.run(run())
    assert closed and cut and held == 0 and items == [None]


def test_a_single_message_larger_than_the_bound_still_goes_when_nothing_waits() -> None:
    """Issue 30 row 5: the bound is on what waits, never on one message (a large result is delivered)."""

    async def run() -> tuple[bool, int]:
        stream = Stream(limit=100)
        stream.put(Reply(raw=b"x" * 500), last=True)
        item = stream.taken(await stream.queue.get())
        return stream.overflowed, 0 if item is None else len(item[0].to_bytes())

    assert asyncio.run(run()) == (False, 500)


def test_an_outbox_past_its_bound_makes_its_producer_wait_until_the_reader_takes_some() -> None:
    """Issue 30 row 5: the bridge's queue toward its client has a bound: back-pressure on the reader
    of the other side, never an unbounded queue."""

    async def run() -> list[str]:
        outbox, seen = Outbox(limit=100), []
        outbox.put_nowait(b"x" * 150)
        waiting = asyncio.ensure_future(outbox.room())
        await asyncio.sleep(0)
        seen.append("waits" if not waiting.done() else "free")
        await outbox.get()
        await asyncio.wait_for(waiting, 1.0)
        seen.append("free")
        return seen

    assert asyncio.run(run()) == ["waits", "free"]
