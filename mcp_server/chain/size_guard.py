"""Pipeline stage 1: refuse a frame over the byte limit before anything parses it. Pure core; no I/O."""

from __future__ import annotations

from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame
from .stage import CheckStage

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "check_size", "size_guard"]

DEFAULT_MAX_FRAME_BYTES = 1_048_576
"""1 MiB of UTF-8, the NDJSON newline not counted."""


def check_size(size: int, limit: int) -> None:
    """Raise ``PAYLOAD_TOO_LARGE`` when ``size`` bytes exceed ``limit``; exactly at the limit passes."""
    if size > limit:
        raise Rejection(CanonicalError.PAYLOAD_TOO_LARGE)


def size_guard(limit: int = DEFAULT_MAX_FRAME_BYTES) -> CheckStage:
    def check(frame: Frame) -> Frame:
        check_size(len(frame.raw) if frame.size is None else frame.size, limit)
        return frame

    return CheckStage(check)
