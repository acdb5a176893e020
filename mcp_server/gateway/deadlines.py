"""How long a relayed request may wait for the upstream: one timer per request.

Every request relayed to the upstream gets the gateway's request timeout; a ``tools/call`` under a
policy gets its tool's timeout instead. Bookkeeping only: the gateway session says what an expiry
does (the client answered in the upstream's place, the upstream told to stop, the request abandoned).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..core.errors import CanonicalError
from ..core.types import Message, RequestId
from ..execution.policy import Policy

__all__ = ["Deadlines", "Expiry"]

_EARLY = 0.001  # seconds: a timer may fire this much before its time (the loop's clock resolution)

Expiry = Callable[[Message, CanonicalError], None]
"""What to do when a request's time is up: the request, and the error its client gets."""


class Deadlines:
    """The requests waiting, in one first-in-first-out table per length of wait, each table with one
    timer for its oldest request: starting and stopping a request's clock is a dict operation, not
    a timer of its own."""

    __slots__ = ("_tables", "_timers", "on_expire", "policy", "seconds")

    def __init__(self, seconds: float, policy: Policy | None, on_expire: Expiry) -> None:
        self.seconds = seconds
        self.policy = policy
        self.on_expire = on_expire
        self._tables: dict[float, dict[RequestId, tuple[float, Message, CanonicalError]]] = {}
        self._timers: dict[float, asyncio.TimerHandle] = {}

    def start(self, message: Message) -> None:
        """A request relayed to the upstream: its clock starts."""
        request_id = message.id
        assert request_id is not None
        seconds, error = self.seconds, CanonicalError.UPSTREAM_TIMEOUT
        if self.policy is not None and message.tool is not None and message.method == "tools/call":
            seconds, error = self.policy.rule_for(message.tool).timeout_seconds, CanonicalError.TOOL_TIMEOUT
        table = self._tables.get(seconds)
        if table is None:
            table = self._tables[seconds] = {}
        loop = asyncio.get_running_loop()
        due = loop.time() + seconds
        table[request_id] = (due, message, error)
        if seconds not in self._timers:
            self._timers[seconds] = loop.call_at(due, self._fire, seconds)

    def _fire(self, seconds: float) -> None:
        """The oldest requests of one table whose time is up expire; the timer waits for the next."""
        del self._timers[seconds]
        table = self._tables[seconds]
        loop = asyncio.get_running_loop()
        now = loop.time() + _EARLY
        while table:
            request_id, (due, message, error) = next(iter(table.items()))
            if due > now:
                self._timers[seconds] = loop.call_at(due, self._fire, seconds)
                return
            del table[request_id]
            self.on_expire(message, error)

    def stop(self, request_id: RequestId | None) -> None:
        """The request was answered (or cancelled): its clock stops."""
        if request_id is None:
            return
        for table in self._tables.values():
            if table.pop(request_id, None) is not None:
                return

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._tables.clear()
