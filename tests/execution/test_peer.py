"""Requests of one's own to a peer (``PeerChannel``): never under an id a peer's request holds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER
from mcp_server.execution.peer import PeerChannel


def test_a_request_of_ones_own_skips_an_id_a_peers_request_still_waits_under() -> None:
    """ADR 43: the gateway's own request (a `tools/list` upstream) takes the next id of its own that
    no request of the client's holds, and is the session's own while it waits, the peer's not."""

    async def run() -> tuple[list[dict[str, Any]], Mapping[str, Any] | None, Session, str]:
        sent: list[dict[str, Any]] = []

        async def write(raw: bytes) -> None:
            sent.append(json.loads(raw))

        session = Session()
        channel = PeerChannel(write, direction=CLIENT_TO_SERVER, prefix="gateway")
        # The ids are one count for every channel of the process: the next one, held by the client.
        taken = f"gateway-{next(PeerChannel._ids) + 1}"
        session.expect(CLIENT_TO_SERVER, taken, "tools/call")
        asking = asyncio.ensure_future(channel.request(session, "tools/list", {}))
        while not sent:
            await asyncio.sleep(0)
        own = sent[0]["id"]
        assert session.given(CLIENT_TO_SERVER, own) and not session.in_flight(CLIENT_TO_SERVER, own)
        assert channel.deliver(own, {"jsonrpc": "2.0", "id": own, "result": {"tools": []}})
        return sent, await asking, session, taken

    sent, result, session, taken = asyncio.run(asyncio.wait_for(run(), 10))
    assert [frame["method"] for frame in sent] == ["tools/list"]
    assert sent[0]["id"] != taken and sent[0]["id"].startswith("gateway-")
    assert result == {"tools": []}
    assert not session.given(CLIENT_TO_SERVER, sent[0]["id"])  # answered: its id is free again
    assert session.in_flight(CLIENT_TO_SERVER, taken)  # the client's request still waits, untouched
