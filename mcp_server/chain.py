"""Composes the middleware chain. The order of the stages lives here and nowhere else."""

from __future__ import annotations

from collections.abc import Sequence

from .classify import classify_stage
from .error_boundary import error_boundary
from .events import EventLog, capture_stage
from .json_syntax import json_syntax
from .registry import SchemaRegistry
from .schema_check import ToolSchemas, schema_check, tool_output_check
from .size_guard import DEFAULT_MAX_FRAME_BYTES, size_guard
from .stage import Check, CheckStage
from .types import Frame, Handler, Middleware, Reply

__all__ = ["build_chain", "compose"]


def compose(middlewares: Sequence[Middleware], handler: Handler) -> Handler:
    """Wrap ``handler`` so that the first middleware listed is the outermost.

    A row of adjacent ``CheckStage``s runs in one coroutine: the same order and the same
    frames as one coroutine per stage, without an ``await`` between two synchronous checks.
    """
    row: list[Check] = []
    for middleware in reversed(middlewares):
        if isinstance(middleware, CheckStage):
            row.insert(0, middleware.check)
            continue
        handler = middleware(_run_checks(row, handler)) if row else middleware(handler)
        row = []
    return _run_checks(row, handler) if row else handler


def _run_checks(checks: Sequence[Check], next_handler: Handler) -> Handler:
    if len(checks) == 1:
        return CheckStage(checks[0])(next_handler)
    row = tuple(checks)

    async def handle(frame: Frame) -> Reply | None:
        for check in row:
            frame = check(frame)
        return await next_handler(frame)

    return handle


def build_chain(
    handler: Handler,
    *,
    registry: SchemaRegistry,
    tools: ToolSchemas | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    policy: Middleware | None = None,
    verdict: Middleware | None = None,
    before_check: Sequence[Middleware] = (),
    after_check: Sequence[Middleware] = (),
    events: EventLog | None = None,
) -> Handler:
    """error boundary [and event log] → [verdict] → size guard → JSON syntax → classify → [policy]
    → [before_check …] → schema check (→ the tool output check on the way back) → [after_check …] → handler.

    ``verdict`` decides what a rejection does before the boundary renders it (a gateway in
    observe mode lets the frame pass); ``before_check`` sees classified frames the policy let
    through (a gateway holds one there until it can be checked); ``after_check`` sees only frames
    that passed every check.
    ``events`` writes one event per frame, from what the stages learnt about it: the boundary
    takes it, once it has rendered the frame's reply.
    """
    stages: list[Middleware] = [error_boundary(registry, events)]
    if verdict is not None:
        stages.append(verdict)
    stages += [size_guard(max_frame_bytes), json_syntax(), classify_stage()]
    if policy is not None:
        stages.append(policy)
    stages += before_check
    stages.append(schema_check(registry, tools))
    if events is not None:
        stages.append(capture_stage())
    if tools is not None:
        stages.append(tool_output_check(tools, registry))
    stages += after_check
    return compose(stages, handler)
