"""Execution timeouts for tool calls relayed to the upstream: one timer per call, per the policy.

Bookkeeping only: the gateway session says what to do when a timer fires (cancel upstream,
answer the client, and abandon the call in its ``Session``, so a reply that comes after is late).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from ..core.types import RequestId
from ..execution.policy import Policy

__all__ = ["CallDeadlines"]


class CallDeadlines:
    def __init__(self, policy: Policy, on_expire: Callable[[RequestId, str], None]) -> None:
        self.policy = policy
        self.on_expire = on_expire
        self._timers: dict[RequestId, asyncio.TimerHandle] = {}

    def start(self, document: Mapping[str, Any] | None) -> None:
        """A frame relayed to the upstream: a ``tools/call`` request gets its tool's timer."""
        if document is None or document.get("method") != "tools/call" or "id" not in document:
            return
        params = document.get("params")
        tool = params.get("name") if isinstance(params, Mapping) else None
        if not isinstance(tool, str):
            return
        request_id = document["id"]
        seconds = self.policy.rule_for(tool).timeout_seconds
        self._timers[request_id] = asyncio.get_running_loop().call_later(seconds, self._fire, request_id, tool)

    def _fire(self, request_id: RequestId, tool: str) -> None:
        self._timers.pop(request_id, None)
        self.on_expire(request_id, tool)

    def answered(self, document: Mapping[str, Any] | None) -> None:
        """A reply relayed to the client: its call's timer stops."""
        request_id = document.get("id") if document is not None and "method" not in document else None
        timer = self._timers.pop(request_id, None) if isinstance(request_id, (str, int)) else None
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
