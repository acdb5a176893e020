"""Composes the chain. The order of the stages lives here and nowhere else.

Composing a direction's stages compiles them: ``Chain.check(frame)`` is one synchronous function
from a frame to its verdict. A frame goes down the fast path first: one parse, dict lookups
prepared here, one jsonio call per schema that applies, no copies and no allocation but the
verdict. Whatever the fast path is not sure of (a doubt) goes down the diagnostic path: the
stages, in order, on the frame, which either refuse it with the exact rejection or pass it.
Both paths give the same verdicts (tests/chain/test_compose.py proves it on generated frames).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.settings import DEFAULT_MAX_FRAME_BYTES
from ..core.types import Direction, Frame, Message
from ..registry.schemas import SchemaRegistry
from .classify import Classify
from .fast_path import Doubt, FastPath, compile_fast_path
from .json_syntax import JsonSyntax
from .policy_check import PolicyCheck
from .schema_check import SchemaCheck, ToolSchemas
from .size_guard import SizeGuard
from .stage import Inspection, Stage

__all__ = ["STAGE_ORDER", "Chain", "build_chain"]

STAGE_ORDER: tuple[type, ...] = (SizeGuard, JsonSyntax, Classify, PolicyCheck, SchemaCheck)
"""size guard → JSON syntax → classify → [policy] → schema check: the design's order, the one place it is written."""


class Chain:
    """One direction's checks: ``check(frame)`` returns the frame's ``Message`` or raises ``Rejection``."""

    __slots__ = ("_fast", "check", "direction", "stages")

    def __init__(self, stages: Sequence[Stage], direction: Direction) -> None:
        self.stages: tuple[Stage, ...] = tuple(stages)
        self.direction = direction
        self._fast = _compile(self.stages, self.inspect)
        self.check: Callable[[Frame], Message] = self._fast or self.inspect  # type: ignore[assignment]

    @property
    def fast(self) -> FastPath | None:
        """The fast path alone, ``None`` on a doubt (``None``: this chain has none): for the tests
        that prove it exact."""
        return _compile(self.stages, lambda frame, document: None)

    def inspect(self, frame: Frame, document: Mapping[str, Any] | None = None) -> Message:
        """The diagnostic path: every stage in order; the message, or the stage's ``Rejection``.
        ``document``: the frame already parsed (the JSON syntax stage then has nothing to do)."""
        inspection = Inspection(frame)
        inspection.document = document
        for stage in self.stages:
            stage.inspect(inspection)
        assert inspection.message is not None
        return inspection.message

    def check_parsed(self, frame: Frame, document: dict[str, Any]) -> Message:
        """``check`` of a frame its reader has parsed already (``mcp-server check`` reads lines)."""
        if self._fast is None:
            return self.inspect(frame, document)
        message = self._fast(frame, document)
        assert message is not None
        return message


def build_chain(
    registry: SchemaRegistry,
    direction: Direction,
    *,
    tools: ToolSchemas | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    policy: PolicyCheck | None = None,
) -> Chain:
    """The chain of one direction, its stages in ``STAGE_ORDER`` (the policy when one is given)."""
    stages: list[Stage] = [SizeGuard(max_frame_bytes), JsonSyntax(), Classify()]
    if policy is not None:
        stages.append(policy)
    stages.append(SchemaCheck(registry, direction, tools))
    return Chain(stages, direction)


def _compile(stages: Sequence[Stage], doubt: Doubt) -> FastPath | None:
    """The fast path for ``stages``, or ``None`` (every frame inspected) when they are not the known
    stages in ``STAGE_ORDER`` — a chain someone composed differently is still exact, only slower."""
    kinds = [type(stage) for stage in stages]
    required = {SizeGuard, JsonSyntax, Classify, SchemaCheck}
    if kinds != [kind for kind in STAGE_ORDER if kind in kinds] or required - set(kinds):
        return None
    size_guard = next(s for s in stages if isinstance(s, SizeGuard))
    schema = next(s for s in stages if isinstance(s, SchemaCheck))
    policy = next((s for s in stages if isinstance(s, PolicyCheck)), None)
    if policy is not None and policy.direction is not schema.direction:
        return None
    return compile_fast_path(schema, size_guard.limit, None if policy is None else policy.fast_allows, doubt)
