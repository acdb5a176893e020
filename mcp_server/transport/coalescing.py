"""Writes made in one turn of the event loop leave as one write: fewer wake-ups for the reader.

Shared by the HTTP transport and the NDJSON pipe writer; it delays a write by one loop turn, never more.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["CoalescingTransport"]


class CoalescingTransport:
    """Writes made in one turn of the event loop leave together: a response's head and body go in
    one send, and the replies to one chunk of pipelined requests in one write, so the reader wakes
    once per turn, not once per write. Everything but ``write`` and ``close`` is the transport's own."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
