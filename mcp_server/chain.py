"""Composes the middleware chain. The order of the stages lives here and nowhere else."""

from __future__ import annotations

from collections.abc import Sequence

from .classify import classify_stage
from .error_boundary import error_boundary
from .json_syntax import json_syntax
from .registry import SchemaRegistry
from .schema_check import ToolSchemas, schema_check
from .size_guard import DEFAULT_MAX_FRAME_BYTES, size_guard
from .types import Handler, Middleware

__all__ = ["build_chain", "compose"]


def compose(middlewares: Sequence[Middleware], handler: Handler) -> Handler:
    """Wrap ``handler`` so that the first middleware listed is the outermost."""
    for middleware in reversed(middlewares):
        handler = middleware(handler)
    return handler


def build_chain(
    handler: Handler,
    *,
    registry: SchemaRegistry,
    tools: ToolSchemas | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    policy: Middleware | None = None,
    verdict: Middleware | None = None,
    after_check: Sequence[Middleware] = (),
) -> Handler:
    """error boundary → [verdict] → size guard → JSON syntax → classify → [policy] → schema check
    → [after_check …] → handler.

    ``verdict`` decides what a rejection does before the boundary renders it (a gateway in
    observe mode lets the frame pass); ``after_check`` sees only frames that passed every check.
    """
    stages: list[Middleware] = [error_boundary(registry)]
    if verdict is not None:
        stages.append(verdict)
    stages += [size_guard(max_frame_bytes), json_syntax(), classify_stage()]
    if policy is not None:
        stages.append(policy)
    stages.append(schema_check(registry, tools))
    stages += after_check
    return compose(stages, handler)
