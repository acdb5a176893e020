"""SIGINT/SIGTERM as an event on the running loop: how every long-running mode learns to stop."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from functools import partial

__all__ = ["stop_on_signals"]


@contextlib.contextmanager
def stop_on_signals(
    *extra: tuple[int, Callable[[], None]], on_stop: Callable[[], None] | None = None
) -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM (and other handlers given as ``(signum, callback)``),
    installed on the running loop for the block and removed after it. ``on_stop`` runs in the
    handler of the first of them, before anything that waits for the event wakes: what must be
    done before a supervisor's SIGKILL can come."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def stopping(signum: signal.Signals) -> None:
        if not stop.is_set():
            sys.stderr.write(f"mcp:stopping signal={signum.name}\n")  # what an operator (or a test) waits on
            sys.stderr.flush()
            if on_stop is not None:
                on_stop()
        stop.set()

    handlers: list[tuple[int, Callable[[], None]]] = [
        (signal.SIGINT, partial(stopping, signal.SIGINT)),
        (signal.SIGTERM, partial(stopping, signal.SIGTERM)),
        *extra,
    ]
    for signum, callback in handlers:
        loop.add_signal_handler(signum, callback)
    try:
        yield stop
    finally:
        for signum, _ in handlers:
            loop.remove_signal_handler(signum)
