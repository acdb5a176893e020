"""Requests from the server to its client (``elicitation/create``) on a connection that carries both.

While a handler waits for the client's answer, the connection keeps being read (``pump``) so the
answer can arrive; the chain checks it like any frame and hands it to ``deliver``. No parsing here.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..core import jsonio
from ..core.session import Session
from ..core.types import SERVER_TO_CLIENT

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
    """One connection's way to ask its client something and wait for the reply."""

    _ids = itertools.count(1)

    def __init__(self, write: Callable[[bytes], Awaitable[None]], pump: Callable[[], Awaitable[bool]]) -> None:
        self._write = write
        self._pump = pump  # read and handle one more chunk of the connection; False at end of input
        self._waiting: dict[str, asyncio.Future[Mapping[str, Any] | None]] = {}

    async def request(self, session: Session, method: str, params: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The ``result`` of the client's reply (``None`` for an error reply or end of input)."""
        request_id = f"srv-{next(self._ids)}"
        answer: asyncio.Future[Mapping[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        session.expect(SERVER_TO_CLIENT, request_id, method)
        try:
            await self._write(jsonio.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            while not answer.done():
                if not await self._pump():
                    return None
            return answer.result()
        finally:
            self._waiting.pop(request_id, None)

    def deliver(self, request_id: Any, document: Mapping[str, Any]) -> bool:
        """A checked reply from the client; ``True`` when a request of ours was waiting for it."""
        answer = self._waiting.get(request_id) if isinstance(request_id, str) else None
        if answer is None or answer.done():
            return False
        result = document.get("result")
        answer.set_result(result if isinstance(result, Mapping) else None)
        return True

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
