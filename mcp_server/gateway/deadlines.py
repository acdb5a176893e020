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

Expiry = Callable[[Message, CanonicalError], None]
"""What to do when a request's time is up: the request, and the error its client gets."""


class Deadlines:
    __slots__ = ("_timers", "on_expire", "policy", "seconds")

    def __init__(self, seconds: float, policy: Policy | None, on_expire: Expiry) -> None:
        self.seconds = seconds
        self.policy = policy
        self.on_expire = on_expire
        self._timers: dict[RequestId, asyncio.TimerHandle] = {}

    def start(self, message: Message) -> None:
        """A request relayed to the upstream: its timer starts."""
        request_id = message.id
        assert request_id is not None
        seconds, error = self.seconds, CanonicalError.UPSTREAM_TIMEOUT
        if self.policy is not None and message.tool is not None and message.method == "tools/call":
            seconds, error = self.policy.rule_for(message.tool).timeout_seconds, CanonicalError.TOOL_TIMEOUT
        loop = asyncio.get_running_loop()
        self._timers[request_id] = loop.call_later(seconds, self._fire, message, error)

    def _fire(self, message: Message, error: CanonicalError) -> None:
        assert message.id is not None
        self._timers.pop(message.id, None)
        self.on_expire(message, error)

    def stop(self, request_id: RequestId | None) -> None:
        """The request was answered (or cancelled): its timer stops."""
        timer = self._timers.pop(request_id, None) if request_id is not None else None
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
