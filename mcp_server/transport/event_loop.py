"""Which event loop runs a command: uvloop where it is installed (the ``uvloop`` extra) and the
``event_loop`` setting allows it, else asyncio's own. The transports run on either (no check of an
asyncio transport class: uvloop's are not subclasses of them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["loop_name", "run", "runner"]

T = TypeVar("T")


def _uvloop() -> Any:
    try:
        import uvloop
    except ImportError:  # an optional extra: asyncio's own loop then
        return None
    return uvloop


def _inetd_style() -> bool:
    """stdin or stdout a socket (one socket for both, inetd style): uvloop's write pipe reads its
    socket to learn that it closed, and would take stdin's frames; asyncio's loop serves it."""
    for fd in (0, 1):
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return True
    return False


def loop_name(choice: str = "auto", *, stdio: bool = False) -> str:
    """The loop ``run`` uses under the setting ``choice`` (``auto`` or ``asyncio``); ``stdio``: the
    command serves its own stdin and stdout."""
    if choice != "auto" or _uvloop() is None or (stdio and _inetd_style()):
        return "asyncio"
    return "uvloop"


def runner(choice: str = "auto", *, stdio: bool = False) -> asyncio.Runner:
    """A runner on the loop ``loop_name(choice, stdio=stdio)`` names, for a command that runs in
    steps on one loop (the gateway starts its upstream, loads, then serves)."""
    if loop_name(choice, stdio=stdio) == "uvloop":
        return asyncio.Runner(loop_factory=_uvloop().new_event_loop)
    return asyncio.Runner()


def run(main: Coroutine[Any, Any, T], choice: str = "auto", *, stdio: bool = False) -> T:
    """``asyncio.run(main)`` on the loop ``loop_name(choice, stdio=stdio)`` names."""
    with runner(choice, stdio=stdio) as running:
        return running.run(main)
