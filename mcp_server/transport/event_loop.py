"""Which event loop runs a command: uvloop where it is installed (the ``uvloop`` extra) and the
``event_loop`` setting allows it, else asyncio's own. The transports run on either (no check of an
asyncio transport class: uvloop's are not subclasses of them)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["loop_name", "run"]

T = TypeVar("T")


def _uvloop() -> Any:
    try:
        import uvloop
    except ImportError:  # an optional extra: asyncio's own loop then
        return None
    return uvloop


def loop_name(choice: str = "auto") -> str:
    """The loop ``run`` uses under the setting ``choice`` (``auto`` or ``asyncio``)."""
    return "uvloop" if choice == "auto" and _uvloop() is not None else "asyncio"


def run(main: Coroutine[Any, Any, T], choice: str = "auto") -> T:
    """``asyncio.run(main)`` on the loop ``loop_name(choice)`` names."""
    uvloop = _uvloop() if choice == "auto" else None
    if uvloop is not None:
        return uvloop.run(main)  # type: ignore[no-any-return]
    return asyncio.run(main)
