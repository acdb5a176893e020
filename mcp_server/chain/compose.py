"""Composes the chain. The order of the stages lives here (``build_chain``) and nowhere else.

Composing a direction's stages compiles them: ``Chain.check(frame)`` is one synchronous function
from a frame to its verdict, made of the fast checks the stages contribute, each wrapped around
the ones after it (go-sdk's middleware, ``func(MethodHandler) MethodHandler``). On the common frame:
one parse, dict lookups prepared at start-up, one ``is_valid`` per schema that applies, no copies.
Whatever a stage's fast check is not sure of (a doubt) goes down the diagnostic path: the stages, in
order, on the frame, which either refuse it with the exact rejection or pass it. A stage that has
no fast check runs its diagnostic check in its place on the compiled path too. Both paths give the
same verdicts (tests/chain/test_compose.py proves it on generated frames).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import FunctionType
from typing import Any

from ..core.errors import Rejection
from ..core.settings import DEFAULT_MAX_FRAME_BYTES
from ..core.types import Direction, Frame, Message
from ..registry.lockfile import LockCheck
from ..registry.schemas import SchemaRegistry
from .classify import Classify
from .json_syntax import JsonSyntax
from .mixed_versions import MixedVersions
from .policy_check import PolicyCheck
from .schema_check import SchemaCheck, ToolSchemas
from .size_guard import SizeGuard
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params, Stage
from .tool_listed import ToolListed
from .tool_lock import ToolLock

__all__ = ["Chain", "FastPath", "build_chain", "compile_fast_path"]

_PARTS = 7  # a check's arguments after the frame: the document and a ``Message``'s six other fields

FastPath = Callable[[Frame, Document], "Message | None"]
"""``path(frame, document=None)``: the verdict of the compiled path (``document``: the frame already
parsed), or what ``doubt`` says."""


class Chain:
    """One direction's checks: ``check(frame)`` returns the frame's ``Message`` or raises ``Rejection``."""

    __slots__ = ("check", "check_parsed", "direction", "stages")

    def __init__(self, stages: Sequence[Stage], direction: Direction) -> None:
        self.stages: tuple[Stage, ...] = tuple(stages)
        self.direction = direction
        fast = compile_fast_path(self.stages, self.inspect)
        self.check: Callable[[Frame], Message] = fast or self.inspect  # type: ignore[assignment]
        # ``check_parsed(frame, document)``: a frame its reader parsed already (``mcp-server check`` reads
        # lines). The parse stage would pass the document on as it is: its fast check is left out.
        parsed = compile_fast_path([stage for stage in self.stages if not isinstance(stage, JsonSyntax)], self.inspect)
        self.check_parsed: Callable[[Frame, dict[str, Any]], Message] = parsed or self.inspect  # type: ignore[assignment]

    @property
    def fast(self) -> FastPath | None:
        """The fast path alone, ``None`` on a doubt (``None``: this chain has none): for the tests
        that prove it exact."""
        return compile_fast_path(self.stages, lambda frame, document: None)

    def inspect(self, frame: Frame, document: Mapping[str, Any] | None = None) -> Message:
        """The diagnostic path: every stage in order; the message, or the stage's ``Rejection``.
        ``document``: the frame already parsed (the JSON syntax stage then has nothing to do)."""
        inspection = Inspection(frame)
        inspection.document = document
        for stage in self.stages:
            stage.inspect(inspection)
        assert inspection.message is not None
        return inspection.message


def build_chain(
    registry: SchemaRegistry,
    direction: Direction,
    *,
    tools: ToolSchemas | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    policy: PolicyCheck | None = None,
    one_version: bool = False,
    lock: LockCheck | None = None,
) -> Chain:
    """The chain of one direction: size guard → JSON syntax → classify → [policy] → schema check →
    [one version per session] → [tool lockfile] → [tool listed, where the tools are ``strict``]."""
    stages: list[Stage] = [SizeGuard(max_frame_bytes), JsonSyntax(), Classify()]
    if policy is not None:
        stages.append(policy)
    stages.append(SchemaCheck(registry, direction, tools))
    if one_version:
        stages.append(MixedVersions())
    if lock is not None:
        stages.append(ToolLock(lock))
    if tools is not None and tools.strict:
        stages.append(ToolListed(tools))
    return Chain(stages, direction)


def compile_fast_path(stages: Sequence[Stage], doubt: Doubt) -> FastPath | None:
    """The stages' fast checks, each around the next, as ``path(frame, document=None)``. ``doubt``
    takes what one of them is not sure of. ``None`` when no stage has one (the compiled path would
    be the diagnostic path twice over)."""
    if not any(callable(getattr(stage, "fast_check", None)) for stage in stages):
        return None
    check: FastCheck = _verdict(doubt)
    for stage in reversed(stages):
        contribute = getattr(stage, "fast_check", None)
        check = contribute(check, doubt) if callable(contribute) else _in_place(stage, check, doubt)
    return _entry(check)


def _entry(check: FastCheck) -> FastPath:
    """``check`` taking a frame (and its document) alone: a copy whose parts default to ``None``
    (a closure's copy costs nothing per frame, a function around it one call), else that function."""
    if isinstance(check, FunctionType) and check.__code__.co_argcount == _PARTS + 1:
        code, closure = check.__code__, check.__closure__
        return FunctionType(code, check.__globals__, check.__name__, (None,) * _PARTS, closure)

    def path(frame: Frame, document: Document = None) -> Message | None:
        return check(frame, document, None, None, None, None, None, None)

    return path


def _verdict(doubt: Doubt) -> FastCheck:
    """What comes after the last stage: the message the stages passed on, built (none: a doubt)."""
    new = tuple.__new__

    def verdict(
        frame: Frame, document: Document, kind: Kind, rid: Id, method: Name, params: Params, version: Name, tool: Name
    ) -> Message | None:
        if kind is None:
            return doubt(frame, document)
        return new(Message, (kind, rid, method, params, version, tool, document))

    return verdict


def _in_place(stage: Stage, after: FastCheck, doubt: Doubt) -> FastCheck:
    """A stage without a fast check, on the compiled path: its diagnostic check, on what the fast
    checks before it learnt; a refusal is a doubt (the diagnostic path names it, as it would)."""

    def check(
        frame: Frame, document: Document, kind: Kind, rid: Id, method: Name, params: Params, version: Name, tool: Name
    ) -> Message | None:
        inspection = Inspection(frame)
        inspection.document = document
        if kind is not None:
            inspection.message = Message(kind, rid, method, params, version, tool, document)
        try:
            stage.inspect(inspection)
        except Rejection:
            return doubt(frame, document)
        parsed, message = inspection.document, inspection.message
        parsed = parsed if parsed is None or type(parsed) is dict else dict(parsed)
        if message is None:
            return after(frame, parsed, None, None, None, None, None, None)
        return after(
            frame, parsed, message.kind, message.id, message.method, message.params, message.version, message.tool
        )

    return check
