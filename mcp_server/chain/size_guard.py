"""Pipeline stage 1: refuse a frame over the byte limit before anything parses it. Pure; no I/O."""

from __future__ import annotations

from ..core.errors import CanonicalError, Rejection
from ..core.settings import DEFAULT_MAX_FRAME_BYTES
from .stage import Inspection

__all__ = ["SizeGuard", "check_size"]


def check_size(size: int, limit: int) -> None:
    """Raise ``PAYLOAD_TOO_LARGE`` when ``size`` bytes exceed ``limit``; exactly at the limit passes."""
    if size > limit:
        raise Rejection(CanonicalError.PAYLOAD_TOO_LARGE)


class SizeGuard:
    __slots__ = ("limit",)

    def __init__(self, limit: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.limit = limit

    def inspect(self, inspection: Inspection) -> None:
        frame = inspection.frame
        check_size(len(frame.raw) if frame.size is None else frame.size, self.limit)
