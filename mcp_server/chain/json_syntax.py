"""Pipeline stage 2: parse the frame once. Pure core; no I/O.

Invalid JSON, invalid UTF-8, NaN or Infinity → -32700; a top-level value that is not an
object (a batch array included: MCP sends one message per frame) → -32600. Both with id null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame
from .stage import CheckStage

__all__ = ["json_syntax", "parse"]


def parse(raw: bytes) -> Mapping[str, Any]:
    try:
        document = jsonio.loads(raw)
    except jsonio.JSONSyntaxError:
        raise Rejection(CanonicalError.PARSE_ERROR) from None
    if not isinstance(document, dict):
        kind = "batch_not_supported" if isinstance(document, list) else "not_an_object"
        raise Rejection(CanonicalError.INVALID_ENVELOPE, [{"path": "", "msg": kind}])
    return document


def json_syntax() -> CheckStage:
    def check(frame: Frame) -> Frame:
        return frame.evolve(document=parse(frame.raw))

    return CheckStage(check)
