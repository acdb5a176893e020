"""The floor of any relay process on this machine: lines moved between a client and an upstream,
unparsed and unchecked, by two threads blocked in ``read``. What this adds to a round trip is
what putting any process in the path costs here, before a single frame is looked at.
Usage: python bench/bare_relay.py <upstream command ...>
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

_CHUNK = 65_536


def pump(source: int, target: int) -> None:
    """Whole lines from ``source`` to ``target`` as they arrive; a partial line waits for its end."""
    held = b""
    while chunk := os.read(source, _CHUNK):
        lines, _, held = (held + chunk).rpartition(b"\n")
        if lines:
            os.write(target, lines + b"\n")


def main() -> None:
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
