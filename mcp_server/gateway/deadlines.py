"""Execution timeouts for tool calls relayed to the upstream: one timer per call, per the policy.

Bookkeeping only: the gateway session says what to do when a timer fires (cancel upstream,
answer the client). A reply that comes after its call expired is recognised and dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from ..core import jsonio
from ..core.types import RequestId
from ..execution.policy import Policy

__all__ = ["CallDeadlines"]


class CallDeadlines:
    def __init__(self, policy: Policy, on_expire: Callable[[RequestId, str], None]) -> None:
        self.policy = policy
        self.on_expire = on_expire
        self._timers: dict[RequestId, asyncio.TimerHandle] = {}
        self._expired: set[RequestId] = set()

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
        self._expired.add(request_id)
        self.on_expire(request_id, tool)

    def answered(self, document: Mapping[str, Any] | None) -> None:
        """A reply relayed to the client: its call's timer stops."""
        request_id = document.get("id") if document is not None and "method" not in document else None
        timer = self._timers.pop(request_id, None) if isinstance(request_id, (str, int)) else None
        if timer is not None:
            timer.cancel()

    def is_late(self, raw: bytes) -> bool:
        """A reply from the upstream to a call that already timed out (and was answered for it)."""
        if not self._expired:
            return False
        try:
            document = jsonio.loads(raw)
        except jsonio.JSONSyntaxError:
            return False
        if not isinstance(document, dict) or "method" in document:
            return False
        request_id = document.get("id")
        if isinstance(request_id, (str, int)) and request_id in self._expired:
            self._expired.discard(request_id)
            return True
        return False

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
