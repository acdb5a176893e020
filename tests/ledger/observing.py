"""A ledger in observe mode, and a frame taken through it as the gateway takes one: shared by the
ledger's tests that follow a session frame by frame."""

from __future__ import annotations

import json
from typing import Any

from mcp_server.core.errors import Rejection
from mcp_server.core.types import Direction, Frame, Message
from mcp_server.ledger.ledger import GOES_ON, Ledger
from mcp_server.ledger.modes import OBSERVE_ALL
from mcp_server.observe.report import ConformanceReport
from mcp_server.registry.schemas import SchemaRegistry


def observing(registry: SchemaRegistry) -> Ledger:
    """A ledger that observes every rule, as `check` and the gateway in observe mode keep one."""
    return Ledger(registry, OBSERVE_ALL, ConformanceReport(upstream="test", mode="observe"), limits=(1 << 20, 1 << 20))


def take(ledger: Ledger, direction: Direction, document: dict[str, Any]) -> Message | Rejection:
    """One frame through the ledger as the gateway in observe mode takes it: checked, judged when
    refused, and on its way when it goes on (a request then awaits its answer)."""
    frame = Frame(json.dumps(document).encode(), "test", ledger.session, None, direction)
    verdict = ledger.check(frame)
    if isinstance(verdict, Message):
        ledger.passed(frame, verdict)
        ledger.went_on(direction, verdict)
    elif ledger.judge(frame, verdict) in GOES_ON:
        ledger.went_on(direction, verdict.message)
    return verdict
