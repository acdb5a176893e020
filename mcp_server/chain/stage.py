"""A middleware whose whole work is a synchronous check: the form of most pipeline stages.

``CheckStage(check)`` is an ordinary middleware (``handle(frame) = next(check(frame))``), so it
composes like any other; ``chain.compose`` runs a row of them in one coroutine instead of one
coroutine per stage, which is the same thing, faster.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.types import Frame, Handler, Reply

__all__ = ["Check", "CheckStage"]

Check = Callable[[Frame], Frame]
"""A stage's synchronous core: the frame to hand on, or ``Rejection`` raised."""


class CheckStage:
    __slots__ = ("check",)

    def __init__(self, check: Check) -> None:
        self.check = check

    def __call__(self, next_handler: Handler) -> Handler:
        check = self.check

        async def handle(frame: Frame) -> Reply | None:
            return await next_handler(check(frame))

        return handle
