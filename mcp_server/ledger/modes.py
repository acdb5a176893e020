"""What a refused frame's rule is set to: enforce or observe (per direction and tool), or off.

The gateway's configuration answers these questions from its file and flags; ``check`` observes
everything (a capture holds what was delivered). Pure.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

from ..core.kinds import Direction

__all__ = ["INVALID_TOOL_SCHEMA", "OBSERVE_ALL", "TOOL_DEFINITION_CHANGED", "Mode", "Modes"]

TOOL_DEFINITION_CHANGED = "tool_definition_changed"  # a tool listed again otherwise than first seen
INVALID_TOOL_SCHEMA = "invalid_tool_schema"  # a tool whose schemas do not compile


class Mode(StrEnum):
    ENFORCE = "enforce"  # invalid frames are answered by the gateway and never delivered
    OBSERVE = "observe"  # every frame passes unchanged; violations are logged and counted


class Modes(Protocol):
    """The mode each refusal is judged in, and the rules turned off."""

    def mode_for(self, direction: Direction, tool: str | None = None) -> Mode: ...

    def rule_on(self, rule: str) -> bool: ...


class _ObserveAll:
    """Every rule on, every frame observed: a recording's verdicts (what was sent was delivered)."""

    def mode_for(self, direction: Direction, tool: str | None = None) -> Mode:
        return Mode.OBSERVE

    def rule_on(self, rule: str) -> bool:
        return True


OBSERVE_ALL: Modes = _ObserveAll()
