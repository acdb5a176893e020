"""Requests of one's own to a peer: the server's to its client (``elicitation/create``), or a
gateway's to its upstream (``tools/list``), on a connection that carries other traffic too.

While a handler waits for the client's answer, the connection keeps being read (``pump``) so the
answer can arrive; where another task reads the connection, there is no pump. Either way the chain
checks the answer like any frame and hands it to ``deliver``. No parsing here.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..core import jsonio
from ..core.session import Session
from ..core.types import SERVER_TO_CLIENT, Direction, RequestId

__all__ = ["PeerChannel", "approval_request", "attach_peer"]

APPROVAL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve this call"}},
    "required": ["approve"],
}


def approval_request(tool: str, arguments: Mapping[str, Any], digest: str) -> dict[str, Any]:
    """``elicitation/create`` params asking the user to approve one call (arguments shown redacted)."""
    shown = jsonio.dumps(arguments).decode()
    return {
        "message": f"Approve the call of tool {tool!r} with arguments {shown} (sha256 {digest})?",
        "requestedSchema": APPROVAL_SCHEMA,
    }


def approved(result: Mapping[str, Any] | None) -> bool:
    """An ElicitResult that accepts with ``approve: true``; anything else is a refusal."""
    if result is None or result.get("action") != "accept":
        return False
    content = result.get("content")
    return isinstance(content, Mapping) and content.get("approve") is True


class PeerChannel:
    """One connection's way to ask its peer something and wait for the reply.

    ``direction`` is the way the requests go (the server's to its client by default); their ids are
    ``PREFIX-N``, never reused, and none a request of the peer's still waits under (ADR 43). Without
    ``pump`` the reply is awaited while another task reads the connection; ``close`` then ends what
    still waits.
    """

    _ids = itertools.count(1)

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[None]],
        pump: Callable[[], Awaitable[bool]] | None = None,
        *,
        direction: Direction = SERVER_TO_CLIENT,
        prefix: str = "srv",
    ) -> None:
        self._write = write
        self._pump = pump  # read and handle one more chunk of the connection; False at end of input
        self._direction = direction
        self._prefix = prefix
        self._waiting: dict[RequestId, tuple[asyncio.Future[Mapping[str, Any] | None], Session]] = {}

    @property
    def asking(self) -> bool:
        """Whether a request of ours waits for its reply."""
        return bool(self._waiting)

    def owns(self, request_id: RequestId) -> bool:
        """Whether ``request_id`` is a request of ours still waiting for its reply."""
        return request_id in self._waiting

    def _next_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    async def request(
        self, session: Session, method: str, params: Mapping[str, Any], *, version: str | None = None
    ) -> Mapping[str, Any] | None:
        """The ``result`` of the peer's reply (``None`` for an error reply, end of input or ``close``);
        ``version``: the one the request states for itself (a stateless session has none)."""
        request_id = session.free_id(self._direction, self._next_id(), self._next_id)  # (a peer's may hold it)
        answer: asyncio.Future[Mapping[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = (answer, session)
        session.expect(self._direction, request_id, method, version=version, own=True)
        try:
            await self._write(jsonio.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            if self._pump is None:
                return await answer
            while not answer.done():
                if not await self._pump():
                    return None
            return answer.result()
        finally:
            self._waiting.pop(request_id, None)
            session.settle(self._direction, request_id)  # answered, or never will be: ours, not a peer's

    def deliver(self, request_id: RequestId | None, document: Mapping[str, Any]) -> bool:
        """A checked reply from the peer; ``True`` when a request of ours was waiting for it."""
        waiting = self._waiting.get(request_id) if isinstance(request_id, str) else None
        if waiting is None or waiting[0].done():
            return False
        result = document.get("result")
        waiting[0].set_result(result if isinstance(result, Mapping) else None)
        return True

    def close(self) -> None:
        """The peer will not answer any more: every request still waiting gets ``None``, and is no
        longer pending in its session."""
        for request_id, (answer, session) in list(self._waiting.items()):
            session.settle(self._direction, request_id)
            if not answer.done():
                answer.set_result(None)

    def elicit_approval(self, session: Session) -> Callable[[str, Mapping[str, Any], str], Awaitable[bool]]:
        async def ask(tool: str, arguments: Mapping[str, Any], digest: str) -> bool:
            return approved(
                await self.request(session, "elicitation/create", approval_request(tool, arguments, digest))
            )

        return ask


def attach_peer(
    session: Session, write: Callable[[bytes], Awaitable[None]], pump: Callable[[], Awaitable[bool]]
) -> None:
    """A connection's way to ask its client (a server's elicitation for approval), on its session."""
    session.peer = PeerChannel(write, pump)
