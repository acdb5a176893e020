"""The floor of any relay process on this machine: lines moved between a client and an upstream,
unparsed and unchecked, by two threads blocked in ``read``. What this adds to a round trip is
what putting any process in the path costs here, before a single frame is looked at.

With ``--asyncio`` the same relay runs on the standard asyncio event loop, as the gateway does:
the difference between the two is what the loop's own wake-up path costs a round trip.
Usage: python bench/bare_relay.py [--asyncio] <upstream command ...>
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable

_CHUNK = 65_536


def pump(source: int, target: int) -> None:
    """Whole lines from ``source`` to ``target`` as they arrive; a partial line waits for its end."""
    held = b""
    while chunk := os.read(source, _CHUNK):
        lines, _, held = (held + chunk).rpartition(b"\n")
        if lines:
            os.write(target, lines + b"\n")


class _Lines(asyncio.Protocol):
    """The loop's version of ``pump``: whole lines to ``write`` as the loop reads them."""

    def __init__(self, write: Callable[[bytes], object], ended: asyncio.Future[None]) -> None:
        self.write, self.ended, self.held = write, ended, b""

    def data_received(self, data: bytes) -> None:
        lines, _, self.held = (self.held + data).rpartition(b"\n")
        if lines:
            self.write(lines + b"\n")

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ended.done():
            self.ended.set_result(None)


async def relay_on_the_loop(command: list[str]) -> None:
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    upstream = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE, stdout=write_end)
    os.close(write_end)
    to_upstream = upstream.stdin
    assert to_upstream is not None
    client_out = os.fdopen(1, "wb", buffering=0)
    ended: asyncio.Future[None] = loop.create_future()
    await loop.connect_read_pipe(lambda: _Lines(to_upstream.write, ended), os.fdopen(0, "rb", buffering=0))
    await loop.connect_read_pipe(lambda: _Lines(client_out.write, loop.create_future()), os.fdopen(read_end, "rb", 0))
    await ended
    to_upstream.close()
    await upstream.wait()


def main() -> None:
    if sys.argv[1:2] == ["--asyncio"]:
        asyncio.run(relay_on_the_loop(sys.argv[2:]))
        return
    upstream = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert upstream.stdin is not None and upstream.stdout is not None
    replies = threading.Thread(target=pump, args=(upstream.stdout.fileno(), 1), daemon=True)
    replies.start()
    pump(0, upstream.stdin.fileno())
    upstream.stdin.close()
    upstream.wait()
    replies.join(timeout=5)


if __name__ == "__main__":
    main()
